"""checkpoints.milestones: one checkpoint in every M kept forever beside keep_last's window. The spec field and its
errors, the plan's decision and storage cost, the program's tag-selected expiry rule and policy, and the node's
tagger (trainstack-ckpt-sync), whose passes under a simulated lifecycle keep every milestone and the last N."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.plan import milestones, refusals, spec_refusals
from generator.plan.cost import checkpoints_held, checkpoints_written, is_milestone, life_hours
from generator.plan.fit import PlanningError
from generator.plan.milestones import MILESTONE, RETENTION_TAG, ROLLING
from generator.plan.pipeline import load, plan_located
from generator.present.diagram import flowchart
from generator.preview.mockrun import run_program
from generator.render.files import ckpt_sync_script, cluster_facts
from generator.spec import codes

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "alicloud:oss/bucket:Bucket"
RULE = "expire-checkpoints-past-keep-last"


def _spec(tmp_path: Path, extra: str, name: str = "pretrain-70b", platform: str = "") -> Path:
    text = (ROOT / "examples" / f"{name}.yaml").read_text()
    text = text.replace("checkpoints:\n", f"checkpoints:\n{extra}", 1)
    if platform:
        text = text.replace("compute:\n", f"compute:\n  platform: {platform}\n", 1)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def _plan_cli(spec: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator.cli", "plan", str(spec)],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


# ---- the spec ----


@pytest.mark.parametrize(
    ("extra", "code", "field"),
    [
        ("  milestones: {every: 10}\n", spec_refusals.MilestonesWithoutKeepLast.code, "checkpoints.milestones"),
        ("  keep_last: 3\n  milestones: {every: 1}\n", codes.OUT_OF_RANGE.code, "checkpoints.milestones.every"),
        ("  keep_last: 3\n  milestones: {}\n", codes.MILESTONE_FORM.code, "checkpoints.milestones"),
        ("  keep_last: 3\n  milestones: {every: 4, at_steps: [10]}\n", codes.MILESTONE_FORM.code,
         "checkpoints.milestones"),
        ("  keep_last: 3\n  milestones: {every_hours: 0}\n", codes.OUT_OF_RANGE.code,
         "checkpoints.milestones.every_hours"),
        ("  keep_last: 3\n  milestones: {at_steps: [20, 10, 20]}\n", codes.REFUSED_VALUE.code,
         "checkpoints.milestones.at_steps"),
        ("  keep_last: 3\n  milestones: 10\n", codes.EXPECTED_MAPPING.code, "checkpoints.milestones"),
    ],
)
def test_a_bad_milestones_is_refused_with_file_line_and_field(
    tmp_path: Path, extra: str, code: str, field: str
) -> None:
    spec = _spec(tmp_path, extra)
    with pytest.raises(SpecErrors) as e:
        api.plan(spec)
    assert [(p.code, p.dotted) for p in e.value.problems] == [(code, field)]
    run = _plan_cli(spec)
    assert run.returncode == 2, run.stderr
    line = next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if "milestones" in t)
    assert re.search(rf"^{re.escape(str(spec))}:{line}:\d+: {re.escape(field)}: ", run.stderr, re.MULTILINE)


@pytest.mark.parametrize(
    ("extra", "code", "path", "fields"),
    [
        ("{}", codes.MILESTONE_FORM, ("checkpoints", "milestones"), {"given": ()}),
        (
            "{every: 4, every_hours: 2}",
            codes.MILESTONE_FORM,
            ("checkpoints", "milestones"),
            {"given": ("every", "every_hours")},
        ),
        ("{at_steps: [20, 10, 20]}", codes.REFUSED_VALUE, ("checkpoints", "milestones", "at_steps"), None),
        ("{at_steps: []}", codes.OUT_OF_RANGE, ("checkpoints", "milestones", "at_steps"), None),
        ("{every_hours: 0}", codes.OUT_OF_RANGE, ("checkpoints", "milestones", "every_hours"), None),
        ("{every_hours: true}", codes.REFUSED_VALUE, ("checkpoints", "milestones", "every_hours"), None),
    ],
)
def test_milestones_take_exactly_one_form(
    tmp_path: Path, extra: str, code: codes.SpecCode, path: tuple, fields: dict | None
) -> None:
    spec = _spec(tmp_path, f"  keep_last: 3\n  milestones: {extra}\n")
    with pytest.raises(SpecErrors) as e:
        load(spec)
    (p,) = e.value.problems
    assert (p.code, p.path) == (code.code, path) and p.file == str(spec)
    assert p.line == next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if "milestones" in t)
    if fields is not None:
        assert dict(p.fields) == fields


@pytest.mark.parametrize("form", ["{every: 4}", "{every_hours: 24}", "{at_steps: [100, 2000]}"])
@pytest.mark.parametrize(
    ("name", "platform", "title"), [("finetune-dlc", "", "PAI-DLC"), ("pretrain-70b", "lingjun", "Lingjun")]
)
def test_platforms_without_the_tagger_refuse_milestones(
    tmp_path: Path, name: str, platform: str, title: str, form: str
) -> None:
    spec = _spec(tmp_path, f"  keep_last: 3\n  milestones: {form}\n", name, platform)
    with pytest.raises(SpecErrors) as e:
        api.plan(spec)
    refused = [dict(p.fields) for p in e.value.problems if p.code == spec_refusals.FieldNotHonoured.code]
    assert [(f["field"], f["platform"]) for f in refused] == [("checkpoints.milestones", title)]
    assert _plan_cli(spec).returncode == 2


def test_the_schema_and_the_docs_name_milestones() -> None:
    assert "milestones" in json.dumps(api.schema())
    assert "| `checkpoints.milestones.every` |" in (ROOT / "docs" / "spec.md").read_text()
    assert (
        "#### `checkpoints.milestones`: one in every M, for good"
        in (ROOT / "docs" / "operations.md").read_text()
    )


# ---- the plan and its cost ----


def test_the_plan_keeps_one_in_every_m_and_bills_them_to_the_end(tmp_path: Path) -> None:
    plans = {}
    for label, extra in (
        ("all", ""),
        ("last", "  keep_last: 5\n"),
        ("milestones", "  keep_last: 5\n  milestones: {every: 10}\n"),
    ):
        plans[label] = plan_located(load(_spec(tmp_path / label, extra, "foundation-1t")))
    k = plans["milestones"].checkpoints
    assert (k.milestone_every, k.milestone_seconds) == (10, 10 * k.interval_seconds)
    assert (
        plans["last"].checkpoints.milestone_every is None and plans["last"].checkpoints.milestone_seconds == 0
    )
    decision = next(d for d in plans["milestones"].decisions if d.topic == "checkpoint milestones")
    assert (
        decision.choice == "one in every 10: kept forever" and f"{RETENTION_TAG}={ROLLING}" in decision.reason
    )
    # held at the end: keep_last's window, plus the milestones written before it
    wall = plans["milestones"].cost.run_hours + (plans["milestones"].cost.expected_rework_hours or 0.0)
    n = plans["all"].cost.checkpoints_kept
    recent = plans["last"].cost.checkpoints_kept
    assert 0 < recent < n
    assert plans["milestones"].cost.checkpoints_kept == recent + -(-(n - recent) // 10)
    assert checkpoints_held(n, wall, k) == plans["milestones"].cost.checkpoints_kept
    assert life_hours(k) == (k.expire_days + k.retention_days) * 24
    # the storage bill sits between keeping the last 5 and keeping everything
    run = {label: p.cost.object_storage_run for label, p in plans.items()}
    assert run["last"] < run["milestones"] < run["all"]
    after = {label: p.cost.object_storage_after_run_per_month for label, p in plans.items()}
    assert after["last"] < after["milestones"] < after["all"]
    assert [i for i in range(1, 31) if is_milestone(i, 10)] == [1, 11, 21]
    assert "1 in 10 kept forever" in flowchart(plans["milestones"])
    assert "kept forever" not in flowchart(plans["last"])
    assert checkpoints_written is not None


def test_every_hours_and_at_steps_keep_their_milestones_and_bill_them(tmp_path: Path) -> None:
    plans = {}
    for label, extra in (
        ("all", ""),
        ("last", "  keep_last: 5\n"),
        ("hours", "  keep_last: 5\n  milestones: {every_hours: 24}\n"),
        ("steps", "  keep_last: 5\n  milestones: {at_steps: [100000000, 1000, 50000]}\n"),
    ):
        plans[label] = plan_located(load(_spec(tmp_path / label, extra, "foundation-1t")))
    h, st = plans["hours"].checkpoints, plans["steps"].checkpoints
    assert (h.milestone_hours, h.milestone_seconds, h.milestone_every) == (24.0, 86400, None) and h.tags_milestones
    assert (st.milestone_steps, st.milestone_seconds) == ((1000, 50000, 100000000), 0) and st.tags_milestones
    recent = plans["last"].cost.checkpoints_kept
    wall = plans["hours"].cost.run_hours + (plans["hours"].cost.expected_rework_hours or 0.0)
    n = plans["all"].cost.checkpoints_kept
    # about one per 24 h of the hours before the last window; at_steps: the one step of the three the run reaches
    assert abs(plans["hours"].cost.checkpoints_kept - recent - (n - recent) / n * wall / 24) <= 2
    assert checkpoints_held(n, wall, h) == plans["hours"].cost.checkpoints_kept
    assert milestones.total_steps(load(_spec(tmp_path / "steps", "", "foundation-1t")).spec) < 50000
    assert plans["steps"].cost.checkpoints_kept == recent + 1
    run = {label: p.cost.object_storage_run for label, p in plans.items()}
    assert run["last"] < run["steps"] < run["hours"] < run["all"]
    data = {label: json.loads(p.to_json())["checkpoints"] for label, p in plans.items()}
    assert data["hours"]["milestone_hours"] == 24.0 and "milestone_steps" not in data["hours"]
    assert data["steps"]["milestone_steps"] == [1000, 50000, 100000000] and "milestone_hours" not in data["steps"]
    assert "milestone_hours" not in data["last"] and "milestone_steps" not in data["last"]
    choices = {label: [d.choice for d in p.decisions if d.topic == "checkpoint milestones"] for label, p in plans.items()}
    assert choices["hours"] == ["one per 24 h: kept forever"] and choices["steps"] == ["3 step(s): kept forever"]


def test_a_window_no_longer_than_the_interval_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "  keep_last: 5\n  milestones: {every_hours: 2}\n", "foundation-1t")
    with pytest.raises(PlanningError) as e:
        plan_located(load(spec))
    (p,) = e.value.problems
    assert p.code == refusals.MilestoneWindowShort.code and dict(p.fields)["hours"] == 2.0
    assert dict(p.fields)["interval_seconds"] >= 7200 and p.dotted == "checkpoints.milestones.every_hours"
    assert _plan_cli(spec).returncode == 2


# ---- the program ----


def test_at_steps_reach_the_node_and_the_lifecycle_rule(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "  keep_last: 4\n  milestones: {at_steps: [500, 100]}\n")
    result = api.render_stack(spec, tmp_path / "stack")
    assert result.lint is not None and not result.lint.failed
    program = (result.dest / "__main__.py").read_text()
    assert '"trainstack-retention": "rolling"' in program and "oss:PutObjectTagging" in program
    facts = cluster_facts(plan_located(load(spec)))
    assert facts["checkpoint"]["milestone_steps"] == [100, 500] and "milestone_seconds" not in facts["checkpoint"]
    assert "def retention_pass" in facts["ckpt_sync"]
    assert "TRAINSTACK_CHECKPOINT_MILESTONE_STEPS" in program


def test_the_program_expires_only_rolling_objects_and_lets_the_node_tag(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "  keep_last: 4\n  milestones: {every: 6}\n")
    result = api.render_stack(spec, tmp_path / "stack")
    assert result.lint is not None and not result.lint.failed
    plan = json.loads((result.dest / "plan.json").read_text())
    g = run_program(
        result.dest, project=plan["name"], stack=plan["stack"], config={"alicloud:region": plan["region"]}
    )
    rules = {r["id"]: r for r in g.one(BUCKET).get("lifecycle_rules")}
    assert rules[RULE]["tags"] == {RETENTION_TAG: ROLLING}
    assert rules[RULE]["filter"] == {"not": {"prefix": "checkpoints/_trainstack/"}}
    assert (
        "tags" not in rules["expire-noncurrent-checkpoints"]
    )  # noncurrent versions expire whatever their tag
    policy = json.loads(g.one("alicloud:ram/policy:Policy").get("policy_document"))
    actions = {a for s in policy["Statement"] for a in s["Action"]}
    assert "oss:PutObjectTagging" in actions
    # the node gets the tagger and its window even when checkpoints go straight to OSS
    facts = cluster_facts(plan_located(load(spec)))
    assert facts["checkpoint"]["milestone_seconds"] == plan["checkpoints"]["milestone_seconds"]
    assert "def retention_pass" in facts["ckpt_sync"]
    tool = (result.dest / "node-init.sh").read_text() if (result.dest / "node-init.sh").exists() else ""
    assert "TRAINSTACK_CHECKPOINT_MILESTONE_SECONDS" in (tool + (result.dest / "__main__.py").read_text())


def test_without_milestones_the_committed_stacks_have_no_tagging() -> None:
    for name in ("pretrain-70b", "foundation-1t"):
        program = (ROOT / "stacks" / name / "__main__.py").read_text()
        assert "PutObjectTagging" not in program.split("CLUSTER_FACTS")[0]
        assert '"trainstack-retention": "rolling"' not in program


# ---- the node's tagger, under a simulated lifecycle ----


def _sync(tmp_path: Path) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "trainstack_ckpt_sync"}
    exec(compile(ckpt_sync_script(), "trainstack-ckpt-sync", "exec"), ns)  # noqa: S102 - the generated script
    ns["STATE"] = str(tmp_path)
    assert (ns["RETENTION_TAG"], ns["ROLLING"], ns["MILESTONE"]) == (RETENTION_TAG, ROLLING, MILESTONE)
    return ns


class FakeBucket:
    """The OSS requests trainstack-ckpt-sync makes for tagging: ListObjects (two keys a page, to page) and
    PutObjectTagging; objects are {key: [last modified, tags]}."""

    def __init__(self) -> None:
        self.objects: dict[str, list[Any]] = {}
        self.tag_requests = 0

    def request(
        self, method: str, key: str, sub: str = "", body: bytes = b"", ctype: str = "", query: str = ""
    ):
        if method == "GET" and key == "":
            from urllib.parse import parse_qs

            q = {k: v[0] for k, v in parse_qs(query).items()}
            keys = sorted(k for k in self.objects if k.startswith(q["prefix"]) and k > q.get("marker", ""))
            page, more = keys[:2], len(keys) > 2
            items = "".join(
                f"<Contents><Key>{k}</Key><LastModified>"
                f"{time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime(self.objects[k][0]))}</LastModified></Contents>"
                for k in page
            )
            marker = f"<NextMarker>{page[-1]}</NextMarker>" if more else ""
            return (
                f"<ListBucketResult><IsTruncated>{'true' if more else 'false'}</IsTruncated>{marker}{items}"
                "</ListBucketResult>"
            ).encode()
        assert method == "PUT" and sub == "tagging" and ctype == "application/xml"
        self.tag_requests += 1
        value = body.decode().split("<Value>")[1].split("</Value>")[0]
        self.objects[key][1] = {body.decode().split("<Key>")[1].split("</Key>")[0]: value}
        return b""


def test_retention_tags_group_checkpoints_and_pick_the_oldest_of_each_window(tmp_path: Path) -> None:
    sync = _sync(tmp_path)
    p, day = "checkpoints/", 86400
    objects = [
        (f"{p}step-100/model.pt", 10),
        (f"{p}step-100/optim.pt", 20),
        (f"{p}step-200/model.pt", 500),
        (f"{p}step-300/model.pt", day + 5),
        (f"{p}step-250/model.pt", day + 1),
        (f"{p}flat.pt", 2 * day),
        (f"{p}_trainstack/jobs/a/log", 30),
    ]
    tags = sync["retention_tags"](objects, p, day)
    assert tags == {
        f"{p}step-100/model.pt": MILESTONE,
        f"{p}step-100/optim.pt": MILESTONE,
        f"{p}step-200/model.pt": ROLLING,
        f"{p}step-250/model.pt": MILESTONE,
        f"{p}step-300/model.pt": ROLLING,
        f"{p}flat.pt": MILESTONE,
    }


def test_at_steps_tags_the_checkpoints_of_the_listed_steps(tmp_path: Path) -> None:
    sync = _sync(tmp_path)
    p = "checkpoints/"
    objects = [
        (f"{p}iter_0000100/model.pt", 10),
        (f"{p}iter_0000100/optim.pt", 11),
        (f"{p}iter_0000200/model.pt", 20),
        (f"{p}global_step500/model.pt", 50),
        (f"{p}latest/model.pt", 60),
        (f"{p}_trainstack/jobs/a/log", 30),
    ]
    tags = sync["retention_tags"](objects, p, 0, (100, 500))
    assert tags == {
        f"{p}iter_0000100/model.pt": MILESTONE,
        f"{p}iter_0000100/optim.pt": MILESTONE,
        f"{p}iter_0000200/model.pt": ROLLING,
        f"{p}global_step500/model.pt": MILESTONE,
        f"{p}latest/model.pt": ROLLING,
    }
    bucket = FakeBucket()
    for key, modified in objects:
        bucket.objects[key] = [1_700_000_000 + modified, {}]
    assert sync["retention_pass"](bucket, p, 0, (100, 500)) == 5
    assert sync["retention_pass"](bucket, p, 0, (100, 500)) == 0  # nothing new: nothing tagged again
    assert bucket.objects[f"{p}global_step500/model.pt"][1] == {RETENTION_TAG: MILESTONE}
    assert bucket.objects[f"{p}_trainstack/jobs/a/log"][1] == {}


def test_passes_under_the_lifecycle_keep_every_milestone_and_the_last_n(tmp_path: Path) -> None:
    """Checkpoints every 2.5 h for 12 days, a tagging pass after each write, and OSS's daily lifecycle run: objects
    tagged rolling and older than D days go (the plan's rule). Every window's first checkpoint survives, and so do
    the last keep_last, whatever the tagger's restarts (its state file removed half way)."""
    sync = _sync(tmp_path)
    prefix, interval, every, keep_last = "checkpoints/", 9000, 4, 3
    expire_days = max(2, -(-keep_last * interval // 86400) + 1)
    window = every * interval
    bucket = FakeBucket()
    start = (
        1_700_000_000 - 1_700_000_000 % window
    )  # a window boundary, so the first checkpoint opens a window
    written: list[tuple[str, int]] = []
    next_scan = start + 86400
    for i in range(12 * 86400 // interval):
        now = start + i * interval
        while next_scan <= now:  # the lifecycle's daily run
            for key, (modified, tags) in list(bucket.objects.items()):
                if tags.get(RETENTION_TAG) == ROLLING and next_scan - modified >= expire_days * 86400:
                    del bucket.objects[key]
            next_scan += 86400
        name = f"iter_{i:07d}"
        for part, delay in (("model.pt", 0), ("optim.pt", 40)):
            bucket.objects[f"{prefix}{name}/{part}"] = [now + delay, {}]
        bucket.objects[f"{prefix}_trainstack/jobs/{i}/log"] = [now, {}]
        written.append((name, now))
        if i == 40:
            (tmp_path / "ckpt-retention.json").unlink()
        sync["retention_pass"](bucket, prefix, window)
    present = {key.split("/")[1] for key in bucket.objects if "/_trainstack/" not in key}
    milestones = {name for name, t in written if t % window < interval}
    assert len(milestones) == -(-len(written) // every)
    assert milestones <= present  # every milestone is still there
    assert {name for name, _ in written[-keep_last:]} <= present  # and the last keep_last
    end = written[-1][1]
    young = {
        name for name, t in written if end - t < (expire_days + 1) * 86400
    }  # within D days and a daily scan
    assert present - milestones <= young and len(present - milestones) < len(young)  # the rest expired
    assert len(present) < len(written)
    assert all(
        tags == {} for key, (_, tags) in bucket.objects.items() if "/_trainstack/" in key
    )  # logs untouched
    assert all(
        tags == {RETENTION_TAG: MILESTONE}
        for key, (_, tags) in bucket.objects.items()
        if key.split("/")[1] in milestones
    )
    # a pass over an unchanged bucket tags nothing again
    before = bucket.tag_requests
    assert sync["retention_pass"](bucket, prefix, window) == 0 and bucket.tag_requests == before
