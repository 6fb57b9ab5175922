"""No code from names: every string that reaches a generated file is escaped for that file's language.

Spec files with hostile names (quotes, triple quotes, backslashes, ``$(...)``, backquotes, newlines) are rendered,
previewed, validated and diffed; the outputs must parse (``ast.parse``, ``bash -n``, YAML, JSON), read back the
name exactly, and run nothing. The escapers themselves are checked by round trips over generated text.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from generator import api
from generator.cli import main
from generator.render import escape
from generator.render import files as render
from generator.render.stackdir import load_yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = "name: hostile-run\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\ncompute: {nodes: 1}\n"

# Each name, if pasted raw, would create a file called PWNED (or break the file it lands in).
HOSTILE_NAMES = [
    'x""";open("PWNED","w");""".yaml',
    "x'''\";__import__('os').system('touch PWNED');'''.yaml",
    "x$(touch PWNED).yaml",
    "x`touch PWNED`.yaml",
    "back\\slash\\N{BULLET}\\x41.yaml",
    "new\nline\n```\n# heading.yaml",
    "tab\tand ${HOME} and 'single' \"double\".yaml",
    "<img src=x onerror=alert(1)>[link](javascript:x)|cell|.yaml",
]


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "specs").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _no_pwned(repo: Path) -> None:
    assert not list(repo.rglob("PWNED")), "a file name ran code"
    assert not Path("/tmp/PWNED").exists()


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_a_hostile_spec_file_name_runs_nothing_and_reads_back(repo: Path, name: str) -> None:
    spec = repo / "specs" / name
    spec.write_text(SPEC)
    result = api.render_stack(spec)  # lints, i.e. executes __main__.py under the mock runtime
    dest = result.dest
    record = f"specs/{name}"
    main_py = (dest / "__main__.py").read_text()
    tree = ast.parse(main_py)
    assert f"Source spec: {record}\n" in ast.get_docstring(tree, clean=False)  # the exact name, read back
    subprocess.run(["bash", "-n", str(dest / "node-init.sh")], check=True)
    for yaml_file in dest.glob("Pulumi*.yaml"):
        assert isinstance(load_yaml(yaml_file.read_text()), dict)
    json.loads((dest / "plan.json").read_text())
    marker = (dest / ".trainstack" / "DO_NOT_EDIT").read_text()
    assert json.loads(marker.split("spec: ", 1)[1].splitlines()[0]) == record

    readme = (dest / "README.md").read_text()
    up_line = next(line for line in readme.splitlines() if line.startswith("trainstack up "))
    # Run the README's deploy line in bash with a stand-in `trainstack`: it must get the path as one argument.
    argv = subprocess.run(["bash", "-c", "trainstack() { printf '%s\\0' \"$@\"; }\n" + up_line],
                          cwd=repo, capture_output=True, text=True, check=True).stdout
    assert argv.split("\0")[:-1] == ["up", record]
    prose = re.sub(r"(`+).*?\1", "", re.sub(r"```(mermaid)?\n.*?\n```", "", readme,
                                             flags=re.DOTALL))  # not code
    assert "<img" not in prose and "](javascript" not in prose
    fences = [line for line in readme.splitlines() if line.lstrip().startswith("```")]
    # the topology diagram's and the deploy block's fences; the name opens or closes no block
    assert fences == ["```mermaid", "```", "```", "```"]

    runner = CliRunner()
    for args in (["validate", str(spec)], ["preview", str(spec)], ["preview", str(dest)], ["lint", str(spec)],
                 ["render", "--check", str(spec)], ["diff", str(spec), str(spec)]):
        out = runner.invoke(main, args)
        assert out.exit_code == 0, (args, out.output)
    _no_pwned(repo)


def test_hostile_values_inside_the_spec_are_escaped_too(repo: Path) -> None:
    spec = repo / "specs" / "values.yaml"
    # Without checkpoints, since OSS allows tag keys only letters, digits, spaces and + - = . _ : /
    spec.write_text(SPEC + "checkpoints: {enabled: false}\n"
                    'tags: {team: "a\\"b\'c$(touch PWNED)`x`\\\\", "k\\"ey": "\\"\\"\\"; import os"}\n'
                    "waivers:\n  - {rule: TS001, reason: 'because \"\"\" $(touch PWNED) `x` [a](http://b)'}\n")
    dest = api.render_stack(spec).dest
    tree = ast.parse((dest / "__main__.py").read_text())
    tags = next(ast.literal_eval(n.value) for n in tree.body
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TAGS")
    assert tags["team"] == "a\"b'c$(touch PWNED)`x`\\" and tags['k"ey'] == '"""; import os'
    subprocess.run(["bash", "-n", str(dest / "node-init.sh")], check=True)
    _no_pwned(repo)


def test_every_template_value_is_escaped_or_inert() -> None:
    """The renderer refuses a string that was not escaped for its language, instead of writing it raw."""
    env = render._env()
    with pytest.raises(escape.UnsafeValue, match="without being escaped"):
        env.from_string("x = {{ value }}").render(value='"; import os')
    assert env.from_string("x = {{ value }}").render(value="ecs.gn7e-c16g1.16xlarge") == "x = ecs.gn7e-c16g1.16xlarge"
    assert env.from_string("x = {{ value | py }}").render(value='"; import os') == 'x = "\\"; import os"'
    with pytest.raises(escape.UnsafeValue):
        env.from_string("{{ flag }}").render(flag=True)


# --------------------------------------------------------------------------------------------- round trips
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(text)
def test_python_literal_and_docstring_read_back(value: str) -> None:
    assert ast.literal_eval(escape.py_literal(value)) == value
    doc = f'"""{escape.py_docstring(value)}"""'
    assert ast.literal_eval(doc) == value
    assert "\n" not in escape.py_docstring(value)


@settings(max_examples=300, deadline=None)
@given(text)
def test_comments_stay_on_one_line(value: str) -> None:
    out = escape.comment(value)
    assert len(("#" + out).splitlines()) == 1 and all(ch.isprintable() for ch in out)


@settings(max_examples=200, deadline=None)
@given(text.filter(lambda s: "\0" not in s))
def test_yaml_scalars_read_back(value: str) -> None:
    assert load_yaml(f"key: {escape.yaml_scalar(value)}\n") == {"key": value}


@settings(max_examples=300, deadline=None)
@given(text)
def test_markdown_text_has_no_markup_or_line_breaks(value: str) -> None:
    out = escape.markdown(value)
    assert "\n" not in out and "\r" not in out
    # mentions, URLs, www. names, e-mail addresses and issue references are set in plain code spans (issue 26),
    # whose bodies hold no backquote or pipe; everything outside them is escaped text
    plain = out.replace("\\\\", "").replace("\\`", "")
    for body in re.findall(r"`([^`]*)`", plain):
        assert body and "|" not in body and "\n" not in body
    assert not re.search(r"(?<!\\)[<\[\]`*_|#~]", re.sub(r"`[^`]*`", " ", plain))
    code = escape.markdown_code(value)
    fence = re.match(r"`+", code).group(0)  # type: ignore[union-attr]
    assert code.endswith(fence) and fence not in code[len(fence):-len(fence)] and "\n" not in code


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_shell_words_heredoc_lines_and_double_quotes_read_back() -> None:
    samples = ["", "plain", "a b", "it's", 'say "hi"', "$(touch PWNED)", "`x`", "back\\slash", "new\nline",
               "tab\there", "\x01ctl", "ünïcödé", "${HOME}", "*?[a]", "~root", "-n", "a\\", "'\"'\"'"]
    script = []
    for s in samples:
        script.append(f"printf '%s\\0' {escape.sh_word(s)}")
        script.append(f"cat <<EOF\n{escape.env_assignment('V', s)}\nEOF")
        if all(ch.isprintable() for ch in s):
            script.append(f"printf '%s\\0' \"{escape.sh_double_quoted(s)}\"")
    out = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, check=True,
                         cwd="/tmp").stdout
    # Each sample reads back from the word, and its heredoc line is an assignment that bash sources back.
    for s in samples:
        assert out.startswith(s + "\0"), (s, out[:80])
        out = out[len(s) + 1:]
        line, out = out.split("\n", 1)
        sourced = subprocess.run(["bash", "-c", line + "\nprintf '%s' \"$V\""], capture_output=True, text=True,
                                 check=True, cwd="/tmp").stdout
        assert sourced == s
        if all(ch.isprintable() for ch in s):
            assert out.startswith(s + "\0")
            out = out[len(s) + 1:]
    assert not Path("/tmp/PWNED").exists()
