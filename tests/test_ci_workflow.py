"""The example GitHub Actions workflow (examples/ci/github-actions.yml): its YAML, its scripts run for real.

The YAML is read with ruamel (as GitHub reads YAML 1.2: ``on`` stays a key); every ``run`` script passes
``bash -n``; the report step runs for real on small git repositories (an update, a rename, a deleted spec, a bad
spec; needs jq); the github-script that posts it runs under node against a fake GitHub API (create then edit,
continued comments at section boundaries, a failed run replacing the verdict, gates from the labels read at run
time, a fork writing the job summary); and the deploy step runs against a fake trainstack and Pulumi CLI (it
deploys what differs from the last successful deploy, and retries a failed one).
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

from generator.render import files

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
    assert {"labeled", "unlabeled", "opened", "synchronize", "reopened"} <= set(wf["on"]["pull_request"]["types"])
    check = wf["jobs"]["check"]
    assert check["permissions"]["pull-requests"] == "write"
    names = [s.get("name", s.get("uses")) for s in check["steps"]]
    assert names.index("Plan, picture and offline infrastructure diff") < names.index(
        "Post the report and apply the gates")
    assert _step("Post the report and apply the gates")["if"] == "always()"  # a failure still replaces the verdict
    for job in wf["jobs"].values():
        for step in job["steps"]:
            assert set(step) <= {"name", "id", "if", "uses", "with", "env", "run"}, step
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:  # every action pinned to a version or a commit
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", step["uses"]), step["uses"]
                action, version = step["uses"].split("@")
                # Node 20 actions no longer run on GitHub's runners: the majors that run on Node 24 or later
                current = {"actions/checkout": 5, "actions/setup-python": 6, "actions/github-script": 8,
                           "actions/setup-go": 6, "actions/cache": 5}
                assert int(version.lstrip("v").split(".")[0]) >= current[action], step["uses"]
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def test_the_comment_step_posts_the_diff_only_once_and_no_second_picture() -> None:
    run = _step("Plan, picture and offline infrastructure diff")["run"]
    assert 'trainstack diff "$base" "$spec" --format markdown -o part.md' in run
    assert "--format mermaid" not in run and "trainstack plan" not in run  # the diff draws the one picture
    assert f"echo '{MARKER}'" in run and "<!-- trainstack-section -->" in run
    post = _step("Post the report and apply the gates")
    assert post["uses"].startswith("actions/github-script@")
    script = post["with"]["script"]
    assert MARKER in script and "updateComment" in script and "createComment" in script
    assert "listLabelsOnIssue" in script  # labels as they are now, not the event payload's


def test_the_deploy_job_keeps_secrets_in_its_deploy_step_and_pins_the_pulumi_cli() -> None:
    deploy = _workflow()["jobs"]["deploy"]
    assert not any("secrets." in str(v) for v in deploy.get("env", {}).values())
    for step in deploy["steps"]:
        has_secret = "secrets." in json.dumps(step)
        assert has_secret == (step.get("name") == "Deploy the clusters that differ from their last deploy"), step
    step = next(s for s in deploy["steps"] if s.get("name", "").startswith("Install the Pulumi CLI"))
    install = step["run"]
    assert not re.search(r"\| *(ba)?sh\b", install) and "curl" not in install
    # exactly the CLI of the stacks' SDK pin, built from Go modules with the checksum database on
    assert f"pulumi=={deploy['env']['PULUMI_VERSION']}" == files.PULUMI_REQUIREMENT
    assert step["env"]["GOSUMDB"] == "sum.golang.org" and step["env"]["GOPROXY"] == "https://proxy.golang.org"
    assert all(step["env"][k] == "" for k in ("GONOSUMDB", "GONOSUMCHECK", "GOPRIVATE", "GOINSECURE"))
    assert 'go get -tool "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v${PULUMI_VERSION}"' in install
    assert '[ "$got" = "v${PULUMI_VERSION}" ]' in install  # a cached binary is checked too
    cache = next(s for s in deploy["steps"] if s.get("uses", "").startswith("actions/cache@"))
    assert "${{ env.PULUMI_VERSION }}" in cache["with"]["key"] and "${{ env.GO_VERSION }}" in cache["with"]["key"]
    run = next(s for s in deploy["steps"] if s.get("name", "").startswith("Deploy the clusters"))["run"]
    assert "github.event.before" not in json.dumps(deploy) and "BEFORE" not in run
    assert "trainstack:deployed-digest" in run and "--expect-digest" in run


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_every_run_script_is_valid_bash() -> None:
    for job in _workflow()["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                r = subprocess.run(["bash", "-n"], input=step["run"], text=True, capture_output=True, check=False)
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
    _render(repo, "ft", "same")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "specs" / "ft.yaml").write_text(spec.replace("team: llm-apps", "team: llm-platform"))
    _render(repo, "ft")
    comment, outputs = _run_comment_step(repo, tmp_path)
    assert comment.startswith(MARKER + "\n### trainstack: 1 spec changes infrastructure\n")
    assert "| spec | what happens | cost per month |" in comment
    assert "| `specs/ft.yaml` | update · 🟢 safe |" in comment and "same.yaml" not in comment  # only the changed spec
    assert "<details><summary><code>specs/ft.yaml</code>: update" in comment  # each spec's detail folded
    assert "<!-- trainstack-diff -->" in comment and "<sub>unchanged: stack finetune-7b/dev · nodes 1" in comment
    assert comment.count(MARKER) == 1
    assert outputs == "gates=\nerror=no\n"


def _render(repo: Path, *names: str) -> None:
    for name in names:
        subprocess.run([sys.executable, "-m", "generator.cli", "render", f"specs/{name}.yaml"], cwd=repo,
                       check=True, capture_output=True)


def _run_comment_step(repo: Path, tmp_path: Path) -> tuple[str, str]:
    out = tmp_path / "github_output"
    out.write_text("")
    env = {**os.environ, "BASE_REF": "main", "GITHUB_OUTPUT": str(out),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = _step("Plan, picture and offline infrastructure diff")["run"]
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run], cwd=repo, env=env,
                       text=True, capture_output=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    return (repo / "comment.md").read_text(), out.read_text()


@pytest.mark.skipif(not (shutil.which("bash") and shutil.which("jq") and shutil.which("git")),
                    reason="needs bash, jq and git")
def test_a_rename_a_deleted_spec_and_a_bad_spec_are_reported_and_gated(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    spec = (ROOT / "examples" / "finetune-7b.yaml").read_text()
    for name in ("ft", "gone", "bad"):
        (repo / "specs" / f"{name}.yaml").write_text(spec.replace("name: finetune-7b", f"name: {name}-7b"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _render(repo, "ft", "gone", "bad")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-q", "-b", "pr")
    (repo / "specs" / "ft.yaml").write_text(spec.replace("name: finetune-7b", "name: ft-7b-v2"))
    (repo / "specs" / "bad.yaml").write_text(spec.replace("name: finetune-7b", "name: bad-7b").replace(
        "nodes: 1", "nodes: -3"))
    _git(repo, "rm", "-q", "specs/gone.yaml")
    _render(repo, "ft")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "head")
    comment, outputs = _run_comment_step(repo, tmp_path)
    assert "with errors" in comment.splitlines()[1]
    assert "| `specs/bad.yaml` | ❌ bad spec |" in comment
    assert "specs/bad.yaml:" in comment.split("```text")[1]  # the FILE:LINE error, in the comment
    assert "| `specs/ft.yaml` | new stack · 🟠 replaces-nodes · **needs approval** (new-stack) |" in comment
    assert "| `specs/gone.yaml` | deleted stack · 🔴 data-at-risk · **needs approval** (data-at-risk, deleted-stack) |" in comment
    gates = dict(line.split("=", 1) for line in outputs.splitlines())
    assert set(gates["gates"].split()) == {"data-at-risk", "deleted-stack", "new-stack"}
    assert gates["error"] == "yes"


def _run_post_script(tmp_path: Path, comments: list[dict[str, Any]], body: str | None, *,
                     labels: tuple[str, ...] = (), env: dict[str, str] | None = None,
                     fork: bool = False) -> list[Any]:
    """Run the github-script step under node with a fake ``github``, ``core`` and ``context``; returns the calls."""
    script = _step("Post the report and apply the gates")["with"]["script"]
    path = tmp_path / "comment.md"
    if body is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(body)
    head_repo = "someone/r" if fork else "o/r"
    payload = {"pull_request": {"head": {"sha": "0123456789abcdef", "repo": {"full_name": head_repo}},
                                "base": {"sha": "fedcba9876543210"}}}
    harness = f"""
const calls = [];
const comments = {json.dumps(comments)};
const labels = {json.dumps([{"name": n} for n in labels])};
const github = {{
  paginate: async (fn, args) => fn === 'listLabelsOnIssue' ? labels : comments,
  rest: {{ issues: {{
    listComments: 'listComments', listLabelsOnIssue: 'listLabelsOnIssue',
    updateComment: async (args) => {{ calls.push(['update', args]); }},
    createComment: async (args) => {{ calls.push(['create', args]); }},
    deleteComment: async (args) => {{ calls.push(['delete', args]); }},
  }} }},
}};
const core = {{
  info: (m) => calls.push(['info', m]),
  setFailed: (m) => calls.push(['failed', m]),
  summary: {{ addRaw(t) {{ calls.push(['summary', t]); return this; }}, write: async () => {{}} }},
}};
const context = {{ repo: {{ owner: 'o', repo: 'r' }}, issue: {{ number: 7 }}, payload: {json.dumps(payload)},
                  serverUrl: 'https://github.com', runId: 42 }};
const AsyncFunction = Object.getPrototypeOf(async function () {{}}).constructor;
new AsyncFunction('require', 'github', 'context', 'core', {json.dumps(script)})(require, github, context, core)
  .then(() => console.log(JSON.stringify(calls)));
"""
    run_env = {**os.environ, "GATES": "", "ERROR": "no", "OUTCOME": "success", **(env or {})}
    r = subprocess.run(["node", "-e", harness], cwd=tmp_path, text=True, capture_output=True, timeout=60,
                       env=run_env, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_post_step_creates_one_comment_then_edits_it(tmp_path: Path) -> None:
    body = f"{MARKER}\n### trainstack: 1 spec changes infrastructure\n"
    bot = {"login": "github-actions[bot]"}
    human = {"id": 1, "user": {"login": "alice"}, "body": f"{MARKER}\nquoting the bot"}
    (call,) = _run_post_script(tmp_path, [human], body)
    assert call[0] == "create" and call[1]["body"].startswith(body)
    footer = call[1]["body"][len(body):]
    assert "0123456789ab" in footer and "fedcba987654" in footer  # head and base commits
    assert "https://github.com/o/r/actions/runs/42" in footer  # the run's link
    ours = {"id": 2, "user": bot, "body": f"{MARKER}\nold"}
    assert [c[0] for c in _run_post_script(tmp_path, [human, ours], body)] == ["update"]
    older = {"id": 3, "user": bot, "body": "<!-- trainstack-diff -->\n### trainstack diff: safe"}
    assert _run_post_script(tmp_path, [older], body)[0][:1] == ["update"]  # the diff-only comment is taken over


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_long_report_is_continued_at_section_boundaries_and_spare_comments_go(tmp_path: Path) -> None:
    sections = [f"<details><summary>spec {i}</summary>\n\n" + ("x" * 70 + "\n") * 300 + "\n</details>"
                for i in range(5)]  # ~21 k characters each
    body = f"{MARKER}\n### trainstack: 5 specs change infrastructure\n" + "".join(
        f"\n<!-- trainstack-section -->\n{s}" for s in sections)
    bot = {"login": "github-actions[bot]"}
    old = [{"id": i, "user": bot, "body": f"{MARKER}\nold {i}"} for i in (10, 11, 12, 13)]
    calls = _run_post_script(tmp_path, old, body)
    posted = [c[1]["body"] for c in calls if c[0] in ("update", "create")]
    assert len(posted) == 3 and all(len(b) < 65536 for b in posted)  # two ~21 k sections per comment
    for b in posted:  # every <details> a comment opens, it closes
        assert b.count("<details>") == b.count("</details>")
    joined = "".join(posted)
    assert all(f"spec {i}</summary>" in joined for i in range(5))  # no spec is lost
    assert "continued in the next comment (2/3)" in posted[0] and "(continued, 2/3)" in posted[1]
    assert "run log" in posted[2] and "run log" not in posted[0]  # the footer closes the last one
    assert [c[1]["comment_id"] for c in calls if c[0] == "delete"] == [13]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_failed_step_replaces_the_verdict_and_fails_the_check(tmp_path: Path) -> None:
    bot = {"login": "github-actions[bot]"}
    green = {"id": 2, "user": bot, "body": f"{MARKER}\n### trainstack: 🟢 safe"}
    calls = _run_post_script(tmp_path, [green], None, env={"OUTCOME": "failure"})
    (update,) = [c for c in calls if c[0] == "update"]
    assert "the check failed before it could report" in update[1]["body"] and "safe" not in update[1]["body"]
    assert any(c[0] == "failed" for c in calls)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_gates_read_the_labels_at_run_time(tmp_path: Path) -> None:
    body = f"{MARKER}\n### trainstack: 1 spec changes infrastructure\n"
    for gate in ("data-at-risk", "new-stack", "deleted-stack"):
        failed = [c for c in _run_post_script(tmp_path, [], body, env={"GATES": gate}) if c[0] == "failed"]
        assert failed and "allow-data-loss" in failed[0][1]
        assert not [c for c in _run_post_script(tmp_path, [], body, env={"GATES": gate}, labels=("allow-data-loss",))
                    if c[0] == "failed"]
    refused = _run_post_script(tmp_path, [], body, env={"GATES": "fails-at-apply"}, labels=("allow-data-loss",))
    assert [c for c in refused if c[0] == "failed"]  # a change the cloud refuses is never approved by a label


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_fork_pull_request_writes_the_job_summary_and_still_reports(tmp_path: Path) -> None:
    body = f"{MARKER}\n### trainstack: 1 spec changes infrastructure\n"
    calls = _run_post_script(tmp_path, [], body, env={"GATES": "data-at-risk"}, fork=True)
    kinds = [c[0] for c in calls]
    assert "create" not in kinds and "update" not in kinds and "summary" in kinds
    assert any(c[0] == "info" and "fork pull request" in c[1] for c in calls)
    assert "failed" in kinds  # the gate still decides the check


FAKE_TRAINSTACK = r"""#!/usr/bin/env bash
# trainstack as the deploy step uses it: plan --json, preview --json (the folder's digest), up (logged)
case "$1" in
  plan) n=$(basename "$2" .yaml); printf '{"name": "%s", "stack": "dev"}\n' "$n" ;;
  preview) printf '{"stack_digest": "%s"}\n' "$(cat "$2/digest")" ;;
  up) n=$(basename "$2" .yaml); echo "up $n $5" >> "$LOG"; [ "$n" != "$FAIL" ] ;;
  *) exit 9 ;;
esac
"""
FAKE_PULUMI = r"""#!/usr/bin/env bash
# pulumi stack tags kept in $TAGS/<project>.<tag>, the project being the stack folder's name
case "$1 $2 $3" in
  "login "*) exit 0 ;;
  "stack tag get") cat "$TAGS/$(basename "$PWD").$4" 2>/dev/null ;;
  "stack tag set") printf '%s' "$5" > "$TAGS/$(basename "$PWD").$4" ;;
  *) exit 9 ;;
esac
"""


@pytest.mark.skipif(not (shutil.which("bash") and shutil.which("jq")), reason="needs bash and jq")
def test_deploys_follow_the_digest_of_the_last_successful_deploy(tmp_path: Path) -> None:
    """Whatever pushes were cancelled in between, a run deploys every stack whose folder differs from its last
    successful deploy, and a failed deploy is retried by the next run."""
    deploy = _workflow()["jobs"]["deploy"]
    run = next(s for s in deploy["steps"] if s.get("name", "").startswith("Deploy the clusters"))["run"]
    repo, bin_dir, tags = tmp_path / "repo", tmp_path / "bin", tmp_path / "tags"
    for folder in (repo / "specs", bin_dir, tags):
        folder.mkdir(parents=True)
    for name, text in (("trainstack", FAKE_TRAINSTACK), ("pulumi", FAKE_PULUMI)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"

    def push(digests: dict[str, str], fail: str = "") -> tuple[int, list[str]]:
        for name, digest in digests.items():
            (repo / "specs" / f"{name}.yaml").write_text(f"name: {name}\n")
            (repo / "stacks" / name).mkdir(parents=True, exist_ok=True)
            (repo / "stacks" / name / "digest").write_text(digest)
        log.write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TAGS": str(tags),
               "LOG": str(log), "FAIL": fail, "TRAINSTACK_BACKEND": "file:///state", "GITHUB_SHA": "abc"}
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run], cwd=repo, env=env,
                           text=True, capture_output=True, timeout=60, check=False)
        return r.returncode, log.read_text().splitlines()

    assert push({"a": "d1", "b": "d1"}) == (0, ["up a d1", "up b d1"])  # first deploy of both
    assert push({"a": "d1", "b": "d1"}) == (0, [])  # nothing differs from the last deploy
    # a's change lands while its run is cancelled; the next run (b changed too) deploys both
    assert push({"a": "d2", "b": "d2"}) == (0, ["up a d2", "up b d2"])
    rc, ups = push({"a": "d3", "b": "d2"}, fail="a")
    assert rc == 1 and ups == ["up a d3"]  # a failed: its tag stays at d2
    assert (tags / "a.trainstack:deployed-digest").read_text() == "d2"
    assert push({"a": "d3", "b": "d2"}) == (0, ["up a d3"])  # the next run retries it
    assert (tags / "a.trainstack:deployed-commit").read_text() == "abc"


FAKE_GO = r"""#!/usr/bin/env bash
# go as the install step uses it: logs each call; mod tidy writes the versions; build writes a fake CLI
echo "go $*" >> "$LOG"
case "$1" in
  get) case "$*" in *"@${EXPECT_COMMIT}"*|*"@v${PULUMI_VERSION}"*) ;; *) exit 5 ;; esac ;;
  mod) printf 'require github.com/pulumi/pulumi/sdk/v3 v%s\n' "${SDK_VERSION:-$PULUMI_VERSION}" >> go.mod ;;
  build) printf '#!/bin/sh\necho v%s\n' "$PULUMI_VERSION" > "$4"; chmod 0755 "$4" ;;  # build -trimpath -o FILE
  list) mkdir -p "$SDK/python/cmd"; echo exec > "$SDK/python/cmd/pulumi-language-python-exec"; echo "$SDK" ;;
  *) exit 9 ;;
esac
"""
FAKE_GIT = r"""#!/usr/bin/env bash
echo "git $*" >> "$LOG"
case "$*" in *'refs/tags/v3.260.0^{}') printf '%s\trefs/tags/v3.260.0^{}\n' "$EXPECT_COMMIT" ;; esac
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_pulumi_cli_is_built_at_the_sdks_version_and_a_cached_one_is_checked(tmp_path: Path) -> None:
    deploy = _workflow()["jobs"]["deploy"]
    step = next(s for s in deploy["steps"] if s.get("name", "").startswith("Install the Pulumi CLI"))
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    for name, text in (("go", FAKE_GO), ("git", FAKE_GIT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log, path_file = tmp_path / "log", tmp_path / "github-path"
    commit = "0123456789abcdef0123456789abcdef01234567"

    def run(hit: str, **extra: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "runner").mkdir(exist_ok=True)
        env = {**os.environ, **deploy["env"], **{k: str(v) for k, v in step["env"].items()}, "CACHE_HIT": hit,
               "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(home), "LOG": str(log),
               "RUNNER_TEMP": str(tmp_path / "runner"), "GITHUB_PATH": str(path_file),
               "SDK": str(tmp_path / "sdk"), "EXPECT_COMMIT": commit, **extra}
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env,
                              text=True, capture_output=True, timeout=60, check=False)

    built = run("")
    assert built.returncode == 0, built.stdout + built.stderr
    calls = log.read_text()
    assert "go get -tool github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v3.260.0" in calls
    assert f"go get -tool github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3@{commit}" in calls
    cli = home / ".cache" / "pulumi-cli" / "bin"
    assert {p.name for p in cli.iterdir()} == {"pulumi", "pulumi-language-python", "pulumi-language-python-exec"}
    assert path_file.read_text() == f"{cli}\n"
    log.write_text("")
    assert run("true").returncode == 0 and "go " not in log.read_text()  # a cache hit builds nothing
    (cli / "pulumi").write_text("#!/bin/sh\necho v3.253.0\n")  # a cached CLI of another version is refused
    stale = run("true")
    assert stale.returncode == 1 and "not v3.260.0" in stale.stdout
    shutil.rmtree(cli)
    drift = run("", SDK_VERSION="3.261.0")  # a dependency that pulls in a newer sdk/v3 stops the build
    assert drift.returncode == 1 and "did not stay at v3.260.0" in drift.stdout
