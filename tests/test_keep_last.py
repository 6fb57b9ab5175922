"""checkpoints.keep_last: the OSS lifecycle rule that expires old checkpoints by age (never the job logs, never while
paused), the plan's decision and warning, and the object-storage cost that follows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator import api
from generator.catalog import load_catalog
from generator.errors import SpecErrors
from generator.plan import warns
from generator.plan.checkpoints import JOBS_SUBPREFIX, MIN_EXPIRE_DAYS, expire_days
from generator.plan.cost import HOURS_PER_MONTH, checkpoint_hours, checkpoints_held, life_hours
from generator.plan.pipeline import load, plan_located
from generator.preview.mockrun import run_program
from generator.spec import codes

ROOT = Path(__file__).resolve().parent.parent
CATALOG = load_catalog()
BUCKET = "alicloud:oss/bucket:Bucket"
RULE = "expire-checkpoints-past-keep-last"


def _spec(tmp_path: Path, extra: str, name: str = "pretrain-70b", paused: bool = False) -> Path:
    text = (ROOT / "examples" / f"{name}.yaml").read_text()
    text = text.replace("  transition_ia_days: 14\n", f"  transition_ia_days: 14\n{extra}", 1)
    if paused:
        text = text.replace("  bare_metal: prefer\n", "  bare_metal: prefer\n  paused: true\n", 1)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def test_expiry_days_cover_keep_last_intervals_plus_the_daily_scan() -> None:
    assert expire_days(1, 300) == MIN_EXPIRE_DAYS == 2  # short intervals: never under two days
    assert expire_days(5, 9000) == 2  # 5 x 2.5 h = 12.5 h -> 1 day, + 1
    assert expire_days(3, 86400) == 4  # exactly 3 days, + 1
    assert expire_days(10, 7200 * 12 + 1) == 12  # just over 10 days -> 11, + 1
    # at least keep_last checkpoints are younger than the expiry age at any time
    for keep, interval in [(1, 300), (4, 4000), (7, 86400), (50, 1800)]:
        assert expire_days(keep, interval) * 86400 >= keep * interval


def test_the_job_logs_prefix_is_the_one_the_job_runner_writes() -> None:
    template = (ROOT / "templates" / "stack" / "parts" / "checkpoints.py.j2").read_text()
    assert f'CHECKPOINT_PREFIX + "{JOBS_SUBPREFIX}"' in template
    source = (ROOT / "generator" / "live" / "jobs" / "cluster.py").read_text()
    assert f'f"{{self.prefix}}{JOBS_SUBPREFIX}jobs/"' in source


def test_keep_last_plans_an_expiry_decision_and_bounds_the_bucket_and_its_cost(tmp_path: Path) -> None:
    every = plan_located(load(ROOT / "examples" / "pretrain-70b.yaml"))
    spec = _spec(tmp_path, "  keep_last: 3\n")
    spec.write_text(spec.read_text().replace("  retention_days: 30\n", "  retention_days: 3\n", 1))
    kept = plan_located(load(spec))
    k, c = kept.checkpoints, kept.cost
    assert k.keep_last == 3 and k.expiry_enabled
    assert k.expire_days == expire_days(3, k.interval_seconds) >= 2
    assert every.checkpoints.expire_days == 0 and every.checkpoints.keep_last is None
    topics = {d.topic: d for d in kept.decisions}
    why = topics["checkpoint retention"].reason
    assert f"expires current objects under {k.prefix} {k.expire_days} days" in why
    assert "never expired" in why and "compute.paused" in why
    # the bucket at the end: checkpoints of the last expire_days + retention_days only
    s = kept.schedule
    assert s is not None
    # one per interval of progress; the plan's hours are rounded to 0.01 h, so the count from them can be one over
    written = every.cost.checkpoints_kept
    assert 0 <= (s.compute_hours + s.pipeline_bubble_hours) * 3600 / k.interval_seconds - written < 1 + 1e-6
    wall = s.wall_hours
    life = (k.expire_days + k.retention_days) * 24.0
    assert life_hours(k) == life
    assert c.checkpoints_kept == checkpoints_held(written, wall, k) < every.cost.checkpoints_kept == written
    assert c.checkpoints_kept == pytest.approx(life / (wall / written), abs=1)
    std_h, ia_h = checkpoint_hours(written, wall, 14, life)
    assert std_h + ia_h == pytest.approx(
        sum(min(wall * (1 - i / written), life) for i in range(1, written + 1))
    )
    std = CATALOG.storage_price("oss-standard").price_cny * k.size_bytes / 1e9  # per GB-month
    ia = CATALOG.storage_price("oss-ia").price_cny * k.size_bytes / 1e9
    assert c.object_storage_run == pytest.approx((std * std_h + ia * ia_h) / HOURS_PER_MONTH, rel=1e-3)
    assert c.object_storage_per_hour < every.cost.object_storage_per_hour / 2
    assert c.object_storage_after_run_per_month < every.cost.object_storage_after_run_per_month / 4
    warning = next(w for w in kept.warnings if isinstance(w, warns.CheckpointsExpire))
    assert (warning.keep_last, warning.kept) == (3, c.checkpoints_kept)
    assert warning.tier != "oss"  # pretrain-70b writes to CPFS first: the copy would upload old ones again
    assert not [w for w in kept.warnings if isinstance(w, warns.CheckpointsKeptForever)]


def test_the_program_expires_current_checkpoints_but_not_job_logs_and_not_while_paused(
    tmp_path: Path,
) -> None:
    for paused in (False, True):
        spec = _spec(tmp_path / str(paused), "  keep_last: 4\n", paused=paused)
        result = api.render_stack(spec, tmp_path / str(paused) / "stack")
        assert result.lint is not None and not result.lint.failed
        plan = json.loads((result.dest / "plan.json").read_text())
        assert plan["checkpoints"]["keep_last"] == 4 and plan["checkpoints"]["expiry_enabled"] is (not paused)
        days = plan["checkpoints"]["expire_days"]
        g = run_program(
            result.dest, project=plan["name"], stack=plan["stack"], config={"alicloud:region": plan["region"]}
        )
        rules = {r["id"]: r for r in g.one(BUCKET).get("lifecycle_rules")}
        rule = rules[RULE]
        assert rule["enabled"] is (not paused)
        assert rule["prefix"] == "checkpoints/"
        assert rule["expirations"] == [{"days": days}]
        assert rule["filter"] == {"not": {"prefix": "checkpoints/_trainstack/"}}
        # the other rules are as before: noncurrent versions, multipart uploads, IA
        assert {
            "expire-noncurrent-checkpoints",
            "abort-stale-multipart-uploads",
            "old-checkpoints-to-ia",
        } < set(rules)


def test_without_keep_last_no_rule_expires_current_checkpoints() -> None:
    program = (ROOT / "stacks" / "pretrain-70b" / "__main__.py").read_text()
    assert RULE not in program and "BucketLifecycleRuleExpirationArgs" not in program


@pytest.mark.parametrize(
    "value, code",
    [
        ("0", codes.OUT_OF_RANGE.code),
        ("true", codes.REFUSED_VALUE.code),
        ("three", codes.WRONG_TYPE.code),
    ],
)
def test_a_bad_keep_last_is_refused_with_its_field(tmp_path: Path, value: str, code: str) -> None:
    spec = _spec(tmp_path, f"  keep_last: {value}\n")
    with pytest.raises(SpecErrors) as e:
        api.plan(spec)
    assert [(p.code, p.dotted) for p in e.value.problems] == [(code, "checkpoints.keep_last")]
    run = subprocess.run(
        [sys.executable, "-m", "generator.cli", "plan", str(spec)],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 2, run.stderr
    assert f"{spec}:" in run.stderr and ": checkpoints.keep_last: " in run.stderr


def test_the_schema_and_the_docs_name_keep_last() -> None:
    schema = json.dumps(api.schema())
    assert "keep_last" in schema
    spec_md = (ROOT / "docs" / "spec.md").read_text()
    assert "| `checkpoints.keep_last` |" in spec_md
    assert "#### `checkpoints.keep_last`: the last N, by age" in (ROOT / "docs" / "operations.md").read_text()
    assert (
        "### Keeping the last N checkpoints (`checkpoints.keep_last`)"
        in (ROOT / "docs" / "sizing.md").read_text()
    )
