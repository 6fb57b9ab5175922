"""Hostile input, round 3 (issue 26): files that never end, amplified errors, leaks through symlinks, invisible
characters, live Markdown, and stacks that collide or escape.

Each class of the corpus in the issue is reproduced here through the real CLI (``CliRunner``) or the library, and
must end in a clear error (exit 2), never a traceback, an unbounded read or output, a leaked line, a raw invisible
character or live markup in a generated file, or a write outside the intended stack folder.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import api
from generator.cli import main
from generator.errors import SpecErrors
from generator.plan.pipeline import load
from generator.plan.stable_json import dumps
from generator.present import diagram, md
from generator.render import escape, stackdir
from generator.spec import codes, source

ROOT = Path(__file__).resolve().parents[1]
SPEC = (ROOT / "examples" / "finetune-7b.yaml").read_text(encoding="utf-8")
SECRET = "LTAI-do-not-print-0123456789"


def _run(args: list[str], cwd: Path | None = None) -> tuple[int, str]:
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        r = CliRunner().invoke(main, args)
    finally:
        os.chdir(old)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    return r.exit_code, out


def _problems(path: str | Path) -> list[tuple[str, dict[str, object]]]:
    """What the loader refuses in ``path`` (the CLI prints these problems' words), as (code, fields)."""
    with pytest.raises(SpecErrors) as e:
        load(path)
    return [(p.code, dict(p.fields)) for p in e.value.problems]


def _spec(text: str = SPEC, name: str | None = None, stack: str | None = None) -> str:
    if name is not None:
        text = re.sub(r"^name: .*$", f"name: {name}", text, count=1, flags=re.MULTILINE)
    if stack is not None:
        text = re.sub(r"^(name: .*)$", rf"\1\nstack: {stack}", text, count=1, flags=re.MULTILINE)
    return text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository (a ``.git`` folder is what trainstack looks for) holding one spec, specs/a.yaml."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "specs").mkdir()
    (root / "specs" / "a.yaml").write_text(_spec(name="alpha-run"), encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------- unbounded reads
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_before_a_byte_is_read(device: str) -> None:
    code, out = _run(["validate", device])
    assert code == 2 and out.startswith(f"{device}: ")
    assert _problems(device) == [(codes.NOT_REGULAR.code, {"kind": "a device"})]


def test_a_fifo_with_an_endless_writer_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer() -> (
        None
    ):  # an endless writer; opening blocks until trainstack (or the cleanup) opens the reader
        try:
            with open(fifo, "wb", buffering=0) as f:
                while not stop.is_set():
                    f.write(b"a: b\n" * 1000)
        except OSError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        code, out = _run(["validate", str(fifo)])
        assert code == 2 and "is a pipe (FIFO), not a spec file" in out  # wording: the one of NotRegular
    finally:
        stop.set()
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # let a writer still waiting in open() return
        os.close(fd)
        t.join(5)
    code, out = _run(["validate", str(fifo)])  # no writer at all: opening does not wait either
    assert code == 2 and _problems(fifo) == [(codes.NOT_REGULAR.code, {"kind": "a pipe (FIFO)"})]


def test_reads_stop_at_the_limit_plus_one_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(1 << 30)  # a sparse 1 GiB file
    read = []
    real_read = os.read
    monkeypatch.setattr(source.os, "read", lambda fd, n: (read.append(n), real_read(fd, n))[1])
    code, _ = _run(["validate", str(huge)])
    assert code == 2 and sum(read) == source.MAX_SPEC_BYTES + 1
    assert _problems(huge) == [(codes.TOO_LARGE.code, {"max_bytes": source.MAX_SPEC_BYTES})]


def _leaky_repo(repo: Path, tmp_path: Path) -> Path:
    secret = tmp_path / "credentials"
    secret.write_text(f"token: {SECRET}\n[default]\n")
    (repo / "specs" / "leak.yaml").symlink_to(secret)
    (repo / "specs" / "zero.yaml").symlink_to("/dev/zero")
    return repo / "specs"


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "leak.yaml"],
        ["render", "--check", "leak.yaml"],
        ["plan", "leak.yaml"],
        ["cost", "leak.yaml"],
        ["preview", "leak.yaml"],
        ["diff", "leak.yaml", "a.yaml"],
        ["diff", "a.yaml", "leak.yaml"],
        ["validate", "zero.yaml"],
        ["render", "--check", "zero.yaml"],
    ],
)
def test_a_symlink_out_of_the_repository_is_refused_and_quotes_nothing(
    repo: Path, tmp_path: Path, args: list[str]
) -> None:
    specs = _leaky_repo(repo, tmp_path)
    code, out = _run(args, cwd=specs)
    assert code == (1 if args[0] == "diff" else 2), out  # diff: 1 on any error, 2 means "changes"
    link = next(a for a in args if a in ("leak.yaml", "zero.yaml"))
    assert f"{link}: " in out and _problems(specs / link) == [(codes.LINK_OUT.code, {})]
    assert SECRET not in out and "token" not in out and "[default]" not in out


def test_a_symlink_inside_the_repository_is_the_same_spec(repo: Path) -> None:
    (repo / "specs" / "same.yaml").symlink_to("a.yaml")
    assert stackdir.spec_record(repo / "specs" / "same.yaml") == "specs/a.yaml"
    code, out = _run(["validate", "specs/same.yaml"], cwd=repo)
    assert code == 0, out


def test_outside_a_repository_a_link_may_not_leave_its_folder(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "credentials").write_text(f"{SECRET}\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "spec.yaml").symlink_to(tmp_path / "home" / "credentials")
    code, out = _run(["validate", str(tmp_path / "work" / "spec.yaml")])
    assert code == 2 and SECRET not in out
    assert _problems(tmp_path / "work" / "spec.yaml") == [(codes.LINK_OUT.code, {})]


# ------------------------------------------------------------------------------------------- amplified errors
def test_many_aliases_of_long_text_print_a_bounded_error(tmp_path: Path) -> None:
    """200 aliases of a 9,000-character zone stay under the 2 Mi-character expansion limit: every one is a problem,
    but each quotes an excerpt and at most 50 are listed."""
    big = "y" * 9000
    spec = tmp_path / "amp.yaml"
    spec.write_text(
        "name: amp-test\nregion: cn-hangzhou\nmodel: {parameters: 7B}\n"
        f"zones: [&a {big}, " + ", ".join(["*a"] * 200) + "]\n"
    )
    code, out = _run(["validate", str(spec)])
    assert code == 2
    assert len(out) < 40_000, len(out)
    assert "more problems not shown" in out and "(9,000 characters)" in out  # wording: the bound's own line
    assert re.search(r"^\d+ problems found; nothing was written\.$", out, flags=re.MULTILINE)


def test_a_huge_value_is_quoted_as_an_excerpt(tmp_path: Path) -> None:
    spec = tmp_path / "long.yaml"
    spec.write_text(f"name: long-value\nregion: cn-{'q' * 500_000}\nmodel: {{parameters: 7B}}\n")
    code, out = _run(["validate", str(spec)])
    assert code == 2 and "(500,003 characters)" in out
    assert len(out) < 3_000, len(out)


def test_the_alias_bomb_of_text_fails_fast_in_little_memory(tmp_path: Path) -> None:
    """The issue's 402 KB file (one 400 KB anchor, 200 aliases) under a 1 GiB address-space limit."""
    spec = tmp_path / "bomb.yaml"
    spec.write_text(
        "name: amp-test\nregion: cn-hangzhou\nmodel: {parameters: 7B}\n"
        f"zones: [&a {'x' * 400_000}, " + ", ".join(["*a"] * 200) + "]\n"
    )
    code = (
        "import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from generator.cli import main\nmain(['validate', sys.argv[1]])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and len(proc.stderr) < 2_000
    assert _problems(spec) == [(codes.EXPANDS_TOO_LONG.code, {"max_chars": 2_097_152})]


# ------------------------------------------------------------------------------------------- invisible characters
INVISIBLE = "\u061c\u200b\u200d\u200e\u200f\u202e\u2060\u2066\u2069\ufeff\u2028\U000e0041"


def _raw_invisible(text: str) -> list[str]:
    return sorted(
        {f"U+{ord(c):04X}" for c in text if ord(c) > 0x7F and unicodedata.category(c) in ("Cf", "Zl", "Zp")}
    )


def test_invisible_characters_in_any_field_are_refused_with_the_field_named(tmp_path: Path) -> None:
    for field, text in [
        ("tags", 'tags:\n  team: "a\\u202Eb"\n'),
        ("tags", 'tags:\n  "k\\u200Bey": v\n'),
        ("waivers[0].reason", 'waivers:\n  - {rule: TS002, reason: "because \\u2066 no"}\n'),
        ("zones[0]", 'zones: ["cn-hangzhou-k\\u200E"]\n'),
        ("compute.gpu", 'compute: {gpu: "A100-80G\\uFEFF"}\n'),
        ("name", ""),
    ]:
        body = "region: cn-hangzhou\nmodel: {parameters: 7B}\n" + text
        name = 'name: "run\\u2060name"\n' if field == "name" else "name: hidden-run\n"
        spec = tmp_path / "s.yaml"
        spec.write_text(name + body)
        code, out = _run(["validate", str(spec)])
        assert code == 2 and f": {field}" in out, out
        assert {c for c, _ in _problems(spec)} == {codes.INVISIBLE.code}, out


def test_every_output_language_escapes_invisible_characters() -> None:
    value = f"x{INVISIBLE}y"
    outputs = [
        escape.py_literal(value),
        escape.py_docstring(value),
        escape.comment(value),
        escape.sh_word(value),
        escape.yaml_scalar(value),
        escape.markdown(value),
        escape.markdown_code(value),
        escape.json_text(value),
        dumps({"k": value}),
        diagram.label(value),
    ]
    for out in outputs:
        assert _raw_invisible(str(out)) == [], (out, _raw_invisible(str(out)))
    assert ast.literal_eval(escape.py_literal(value)) == value
    assert json.loads(dumps({"k": value}))["k"] == value


def test_a_spec_file_name_with_invisible_characters_reaches_no_file_raw(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    spec = tmp_path / "spec\u202egnp.yaml"
    spec.write_text(SPEC)
    plan = api.plan(spec)
    files = api.render_files(plan, api.spec_record(spec))
    assert "\u202e" in api.spec_record(spec)
    for rel, text in files.items():
        assert _raw_invisible(text) == [], rel


# ------------------------------------------------------------------------------------------- live Markdown
def _outside_code(text: str) -> str:
    return re.sub(r"(`+)(?:(?!\1).)+?\1", " ", text)


@pytest.mark.parametrize(
    "reason",
    [
        "ping @acme/security-team and @octocat about it",
        "see www.evil.example.com and https://evil.example.com/x?y=1 or ftp://x.example",
        "mail security@evil.example.com, fixes #12 and acme/infra#7 and GH-3",
        "reverts 90fa24e and acme/infra@81c43b6727e0 (commit SHAs GitHub links)",
        "<b>bold</b> [link](http://x.example) ![i](y) *em* _u_ ~~s~~ | cell | $(id) {{ 7*7 }} &amp;",
    ],
)
def test_markdown_text_has_no_live_mention_link_or_markup(reason: str) -> None:
    out = md.text(reason)
    outside = _outside_code(out)
    assert not re.search(r"(?<![\w\\])@\w", outside), out
    assert not re.search(r"(?i)www\.|https?:|ftp:|mailto:", outside), out
    assert not re.search(r"(?<![\w\\`])#\d|GH-\d", outside), out
    assert not re.search(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", outside), out
    assert not re.search(r"(?<!\\)[<\[\]*_~|]", outside), out
    assert "&amp;amp;" in out or "&" not in reason


def test_the_plan_markdown_of_a_hostile_waiver_pings_nobody(tmp_path: Path) -> None:
    spec = tmp_path / "md.yaml"
    spec.write_text(
        SPEC + 'waivers:\n  - {rule: TS003, reason: "ping @acme/security-team see www.evil.example.com'
        ' and security@evil.example.com, #12"}\n'
    )
    code, out = _run(["plan", "--format", "markdown", str(spec)])
    assert code == 0, out
    outside = _outside_code(out)
    assert "@acme" not in outside and "www.evil" not in outside and "security@" not in outside
    assert "`@acme/security-team`" in out and "`www.evil.example.com`" in out


# ------------------------------------------------------------------------------------------- stacks that collide
def test_two_specs_of_one_name_are_refused_naming_both(repo: Path) -> None:
    (repo / "specs" / "copy.yaml").write_text(_spec(name="alpha-run"))
    code, out = _run(["render", "specs/a.yaml"], cwd=repo)
    assert code == 0, out
    before = {p: p.read_bytes() for p in (repo / "stacks" / "alpha-run").rglob("*") if p.is_file()}
    for args in (["render", "specs/copy.yaml"], ["render", "--check", "specs/copy.yaml"]):
        code, out = _run(args, cwd=repo)
        assert code == 2 and "specs/copy.yaml" in out and "specs/a.yaml" in out and "both render to" in out, (
            out
        )
    assert {p: p.read_bytes() for p in (repo / "stacks" / "alpha-run").rglob("*") if p.is_file()} == before
    code, out = _run(["render", "--check", "specs/a.yaml"], cwd=repo)
    assert code == 0 and "up to date" in out
    (repo / "specs" / "a.yaml").unlink()  # the spec that made the folder is gone: the folder is free to take
    code, out = _run(["render", "specs/copy.yaml"], cwd=repo)
    assert code == 0, out


def test_one_render_of_two_specs_of_one_name_writes_nothing(repo: Path) -> None:
    (repo / "specs" / "copy.yaml").write_text(_spec(name="alpha-run"))
    code, out = _run(["render", "specs/a.yaml", "specs/copy.yaml"], cwd=repo)
    assert code == 2 and "specs/a.yaml and specs/copy.yaml both render to" in out
    assert not (repo / "stacks").exists()
    with pytest.raises(stackdir.UnsafeStackDir, match="both render to"):
        api.stack_folder_conflicts([repo / "specs" / "a.yaml", repo / "specs" / "copy.yaml"])


def test_dev_and_prod_of_one_name_get_a_folder_each(repo: Path) -> None:
    (repo / "specs" / "a-prod.yaml").write_text(_spec(name="alpha-run", stack="prod"))
    code, out = _run(["render", "specs/a.yaml", "specs/a-prod.yaml"], cwd=repo)
    assert code == 0, out
    dev, prod = repo / "stacks" / "alpha-run", repo / "stacks" / "alpha-run.prod"
    assert (dev / "Pulumi.dev.yaml").is_file() and (prod / "Pulumi.prod.yaml").is_file()
    assert not (dev / "Pulumi.prod.yaml").exists()
    code, out = _run(["render", "--check", "specs/a.yaml", "specs/a-prod.yaml"], cwd=repo)
    assert code == 0 and out.count("up to date") == 2, out
    assert stackdir.stack_identity(prod) == stackdir.StackIdentity("alpha-run", "prod")
    api.stack_folder_conflicts([repo / "specs" / "a.yaml", repo / "specs" / "a-prod.yaml"])  # no conflict


def test_a_spec_through_a_symlinked_folder_is_the_same_stack(repo: Path) -> None:
    code, out = _run(["render", "specs/a.yaml"], cwd=repo)
    assert code == 0, out
    (repo / "ex").symlink_to("specs")
    code, out = _run(["render", "--check", "ex/a.yaml"], cwd=repo)
    assert code == 0 and "up to date" in out, out
    code, out = _run(["render", "ex/a.yaml"], cwd=repo)
    assert code == 0 and "0 changed" in out, out
    assert '"specs/a.yaml"' in (repo / "stacks" / "alpha-run" / ".trainstack" / "DO_NOT_EDIT").read_text()


def test_a_good_and_a_bad_spec_write_nothing(repo: Path) -> None:
    (repo / "specs" / "bad.yaml").write_text("name: bad-run\nregion: cn-hangzhou\nmodel: {parameters: 7Q}\n")
    code, out = _run(["render", "specs/a.yaml", "specs/bad.yaml"], cwd=repo)
    assert code == 2 and "nothing was written" in out
    assert not (repo / "stacks").exists()


# ------------------------------------------------------------------------------------------- stacks that escape
def test_a_stack_folder_that_is_a_symlink_out_of_the_repository_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "stacks").mkdir()
    (repo / "stacks" / "alpha-run").symlink_to(outside)
    for args in (["render", "specs/a.yaml"], ["render", "--check", "specs/a.yaml"]):
        code, out = _run(args, cwd=repo)
        assert code == 2 and "leaves the repository" in out, out
    assert list(outside.iterdir()) == []
    (repo / "stacks" / "alpha-run").unlink()
    (repo / "stacks").rmdir()
    (repo / "stacks").symlink_to(outside)  # the stacks/ folder itself
    code, out = _run(["render", "specs/a.yaml"], cwd=repo)
    assert code == 2 and "leaves the repository" in out
    assert list(outside.iterdir()) == []


def test_a_trainstack_folder_that_is_a_symlink_is_refused(repo: Path, tmp_path: Path) -> None:
    code, out = _run(["render", "specs/a.yaml"], cwd=repo)
    assert code == 0, out
    stack = repo / "stacks" / "alpha-run"
    outside = tmp_path / "outside"
    (stack / ".trainstack").rename(outside)
    (stack / ".trainstack").symlink_to(outside)
    (repo / "specs" / "a.yaml").write_text(_spec(name="alpha-run").replace("interval: 30m", "interval: 45m"))
    before = sorted(p.name for p in outside.iterdir())
    code, out = _run(["render", "specs/a.yaml"], cwd=repo)
    assert code == 2 and ".trainstack is a symbolic link" in out
    assert sorted(p.name for p in outside.iterdir()) == before


def test_a_users_file_where_trainstack_would_write_is_never_overwritten(tmp_path: Path) -> None:
    dest = tmp_path / "stack"
    plan = api.plan(ROOT / "examples" / "finetune-dlc.yaml")
    files = api.render_files(plan, "examples/finetune-dlc.yaml")
    stackdir.write(files, dest)
    (dest / "weights.sh").write_text("#!/bin/sh\necho my own\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("keep me\n")
    weights_plan = api.plan(ROOT / "examples" / "finetune-dlc-weights.yaml")
    with_weights = api.render_files(weights_plan, "examples/finetune-dlc.yaml")
    assert "weights.sh" in with_weights
    with pytest.raises(stackdir.UnsafeStackDir, match="holds weights.sh, not written by trainstack") as e:
        stackdir.write(with_weights, dest)
    assert e.value.exit_code == 2
    assert (dest / "weights.sh").read_text() == "#!/bin/sh\necho my own\n"
    (dest / "weights.sh").unlink()
    (dest / "README.md").unlink()
    (dest / "README.md").symlink_to(outside)  # a link where trainstack writes is not trainstack's either
    with pytest.raises(stackdir.UnsafeStackDir, match="README.md"):
        stackdir.write(files, dest)
    assert outside.read_text() == "keep me\n"


def test_every_file_trainstack_writes_is_recognised_as_its_own(tmp_path: Path) -> None:
    for example in ("finetune-7b", "finetune-dlc-weights", "pretrain-70b"):
        folder = ROOT / "stacks" / example
        for p in folder.rglob("*"):
            rel = p.relative_to(folder).as_posix()
            if p.is_file() and not rel.startswith(".trainstack/state"):
                assert stackdir.ours(p, rel), rel


# ------------------------------------------------------------------------------------------- one stack identity
def test_preview_and_the_live_commands_agree_on_the_stack(tmp_path: Path) -> None:
    """A folder with another stack's config beside its own: preview's digest is the one up checks (issue 27)."""
    from generator import live

    (tmp_path / ".git").mkdir()
    spec = tmp_path / "run.yaml"
    spec.write_text(_spec(name="ident-run", stack="prod"))
    [result] = api.render_stacks([spec])
    folder = result.dest
    (folder / "Pulumi.aaa.yaml").write_text("config:\n  alicloud:region: cn-shanghai\n")  # sorts before prod
    assert api.stack_identity(folder) == stackdir.StackIdentity("ident-run", "prod")
    target = live.target_for(folder, env={})
    assert (target.project, target.stack) == ("ident-run", "prod")
    assert api.preview(folder).digest == live.stack_digest(folder) == live.stack_digest(folder, target.stack)


def test_a_hand_made_folder_is_named_only_when_unambiguous(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text('{"name": "hand-made"}\n')
    (tmp_path / "Pulumi.yaml").write_text("name: hand-made\nruntime: python\n")
    (tmp_path / "Pulumi.prod.yaml").write_text("config: {}\n")
    assert stackdir.stack_identity(tmp_path) == stackdir.StackIdentity("hand-made", "prod")
    (tmp_path / "Pulumi.aaa.yaml").write_text("config: {}\n")
    with pytest.raises(stackdir.StackDirError, match="does not name a project and a stack"):
        stackdir.stack_identity(tmp_path)


def _escaped_per_character(text: str) -> str:
    """The escape as first written, one character at a time: what the line-by-line one must equal."""
    out = []
    for ch in text:
        if ch.isprintable() or ch == "\n":
            out.append(ch)
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            code = ord(ch) - 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    return "".join(out)


@pytest.mark.parametrize(
    "text",
    ["", "\n", "a\nb\n", "x\u202ey\n\nz", "\r\n\u2028\n", "\t\U000e0041\n\u200b", "é\n\U0001f600\n", "\n\n\x00"],
)
def test_the_line_by_line_escape_equals_the_per_character_one(text: str) -> None:
    from generator.plan.stable_json import json_invisible_escaped

    assert json_invisible_escaped(text) == _escaped_per_character(text)
    assert json_invisible_escaped(text * 50) == _escaped_per_character(text * 50)
