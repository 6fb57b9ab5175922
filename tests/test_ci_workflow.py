"""The example GitHub Actions workflow (examples/ci/github-actions.yml) parses and posts ONE pull-request comment.

The YAML is read with ruamel (as GitHub reads YAML 1.2: ``on`` stays a key); every ``run`` script passes
``bash -n``; the comment step runs for real on a small repository (plan, picture guard, diff; needs jq); and the
github-script that posts it runs under node against a fake GitHub API: the first push creates the comment, later
pushes edit it, and nobody else's comment is touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
MARKER = "<!-- trainstack -->"


def _workflow() -> dict[str, Any]:
    return YAML(typ="safe").load(WORKFLOW.read_text())


def _step(name_part: str) -> dict[str, Any]:
    steps = _workflow()["jobs"]["check"]["steps"]
    found = [s for s in steps if name_part in s.get("name", "")]
    assert len(found) == 1, [s.get("name") for s in steps]
    return found[0]


def test_the_workflow_is_valid_yaml_with_the_expected_jobs_and_steps() -> None:
    wf = _workflow()
    assert set(wf["on"]) == {"pull_request", "push"} and set(wf["jobs"]) == {"check", "deploy"}
    check = wf["jobs"]["check"]
    assert check["permissions"]["pull-requests"] == "write"
    names = [s.get("name", s.get("uses")) for s in check["steps"]]
    assert names.index("Plan, picture and offline infrastructure diff") < names.index(
        "Post the plan and the diff as one pull-request comment") < names.index("Data at risk needs an explicit approval")
    for job in wf["jobs"].values():
        for step in job["steps"]:
            assert set(step) <= {"name", "id", "if", "uses", "with", "env", "run"}, step
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:  # every action pinned to a version or a commit
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", step["uses"]), step["uses"]


def test_the_comment_step_has_plan_markdown_guarded_mermaid_and_diff_markdown() -> None:
    run = _step("Plan, picture and offline infrastructure diff")["run"]
    assert 'trainstack plan "$spec" --format markdown' in run
    assert 'trainstack diff "$base" "$spec" --format markdown -o part.md' in run
    assert "*mermaid*) mermaid=yes" in run and 'trainstack plan "$spec" --format mermaid' in run
    assert "```mermaid" in run and f"echo '{MARKER}'" in run
    post = _step("one pull-request comment")
    assert post["uses"].startswith("actions/github-script@")
    script = post["with"]["script"]
    assert MARKER in script and "updateComment" in script and "createComment" in script


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_every_run_script_is_valid_bash() -> None:
    for job in _workflow()["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                r = subprocess.run(["bash", "-n"], input=step["run"], text=True, capture_output=True)
                assert r.returncode == 0, (step.get("name"), r.stderr)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


@pytest.mark.skipif(not (shutil.which("bash") and shutil.which("jq") and shutil.which("git")),
                    reason="needs bash, jq and git")
def test_the_comment_step_writes_one_comment_with_plan_and_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    spec = (ROOT / "examples" / "finetune-7b.yaml").read_text()
    (repo / "specs" / "ft.yaml").write_text(spec)
    (repo / "specs" / "same.yaml").write_text(spec.replace("name: finetune-7b", "name: same-7b"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "specs" / "ft.yaml").write_text(spec.replace("team: llm-apps", "team: llm-platform"))
    out = tmp_path / "github_output"
    env = {**os.environ, "BASE_REF": "main", "HEAD_SHA": "0123456789abcdef", "GITHUB_OUTPUT": str(out),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = _step("Plan, picture and offline infrastructure diff")["run"]
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run], cwd=repo, env=env,
                       text=True, capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    comment = (repo / "comment.md").read_text()
    assert comment.startswith(MARKER + "\n### trainstack: 1 spec(s) change infrastructure\n")
    assert "## `specs/ft.yaml`" in comment and "same.yaml" not in comment  # only the changed spec
    assert "<!-- trainstack-diff -->" in comment and "<!-- trainstack-plan -->" in comment
    assert "| cost per hour |" in comment and "#### Decisions" in comment
    assert comment.count(MARKER) == 1 and "Updated for 0123456789ab" in comment
    assert out.read_text() == "worst=none\nrefused=no\n"


def test_a_change_the_cloud_refuses_fails_the_check() -> None:
    gate = _step("A change the cloud refuses cannot merge")
    assert gate["if"] == "steps.diff.outputs.refused == 'yes'" and "exit 1" in gate["run"]
    run = _step("Plan, picture and offline infrastructure diff")["run"]
    assert '.summary.by_impact["fails-at-apply"]' in run and 'echo "refused=$refused"' in run


def _run_post_script(tmp_path: Path, comments: list[dict[str, Any]], body: str) -> list[dict[str, Any]]:
    """Run the github-script step under node with a fake ``github`` and ``context``; returns the API calls."""
    script = _step("one pull-request comment")["with"]["script"]
    (tmp_path / "comment.md").write_text(body)
    harness = f"""
const calls = [];
const comments = {json.dumps(comments)};
const github = {{
  paginate: async (fn, args) => {{ calls.push(['list', args]); return comments; }},
  rest: {{ issues: {{
    listComments: 'listComments',
    updateComment: async (args) => {{ calls.push(['update', args]); }},
    createComment: async (args) => {{ calls.push(['create', args]); }},
  }} }},
}};
const context = {{ repo: {{ owner: 'o', repo: 'r' }}, issue: {{ number: 7 }} }};
const AsyncFunction = Object.getPrototypeOf(async function () {{}}).constructor;
new AsyncFunction('require', 'github', 'context', {json.dumps(script)})(require, github, context)
  .then(() => console.log(JSON.stringify(calls)));
"""
    r = subprocess.run(["node", "-e", harness], cwd=tmp_path, text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [c for c in json.loads(r.stdout) if c[0] != "list"]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_post_step_creates_one_comment_then_edits_it(tmp_path: Path) -> None:
    body = f"{MARKER}\n### trainstack: 1 spec(s) change infrastructure\n"
    bot = {"login": "github-actions[bot]"}
    human = {"id": 1, "user": {"login": "alice"}, "body": f"{MARKER}\nquoting the bot"}
    assert _run_post_script(tmp_path, [human], body) == [
        ["create", {"owner": "o", "repo": "r", "issue_number": 7, "body": body}]]
    ours = {"id": 2, "user": bot, "body": f"{MARKER}\nold"}
    assert _run_post_script(tmp_path, [human, ours], body) == [
        ["update", {"owner": "o", "repo": "r", "comment_id": 2, "body": body}]]
    older = {"id": 3, "user": bot, "body": "<!-- trainstack-diff -->\n### trainstack diff: safe"}
    assert _run_post_script(tmp_path, [older], body)[0][:1] == ["update"]  # the diff-only comment is taken over
    long = _run_post_script(tmp_path, [], body + "x" * 70000)
    assert len(long[0][1]["body"]) < 65536  # GitHub's limit
