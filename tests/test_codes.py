"""Facts as data: every rejection and every plan warning has a stable, unique code (a rejection a kind too),
docs/codes.md lists exactly the codes the code defines (so the tables cannot drift), plan.json carries each rejected
type's reason, each warning and each price's provenance, and the texts are rendered from the fields."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from generator.catalog import load_catalog
from generator.plan import refusals, rejections, shape_refusals, spec_refusals, unfit_refusals, warns
from generator.plan.model import ASSUMPTION, ESTIMATE, LIST_PRICE, PRICE_BASES
from generator.plan.pipeline import plan_file
from generator.platforms.dlc import refusals as dlc_refusals
from generator.platforms.lingjun import refusals as lingjun_refusals
from generator.preview.diff import notes as diff_notes
from generator.preview.diff import reasons
from generator.spec import codes as spec_codes
from generator.spec.model import Spec

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog()
DOC = ROOT / "docs" / "codes.md"


def rejection_table() -> str:
    """The table docs/codes.md must hold, from the classes themselves."""
    rows = ["| code | kind | event | when | fields |", "|---|---|---|---|---|"]
    for cls in rejections.codes():
        kind = "bf16 or filter" if cls is rejections.NoPrecision else cls.KIND
        rows.append(f"| `{cls.code}` | {kind} | `{cls.__name__}` | {cls.summary} | {_fields(cls)} |")
    return "\n".join(rows) + "\n"


def _fields(cls: type) -> str:
    """The instance fields of an event class (its ClassVars, code and summary, are not fields)."""
    return ", ".join(f"`{f.name}`" for f in dataclasses.fields(cls)) or "none"


def warning_table() -> str:
    """The warnings table docs/codes.md must hold, from the classes themselves."""
    rows = ["| code | event | when | fields |", "|---|---|---|---|"]
    rows += [f"| `{c.code}` | `{c.__name__}` | {c.summary} | {_fields(c)} |" for c in warns.codes()]
    return "\n".join(rows) + "\n"


def refusal_table() -> str:
    """The planning-problems table docs/codes.md must hold, from the classes themselves."""
    rows = ["| code | field | event | when | fields |", "|---|---|---|---|---|"]
    rows += [f"| `{c.code}` | `{'.'.join(c.path)}` | `{c.__name__}` | {c.summary} | {_fields(c)} |"
             for c in [*refusals.codes(), *unfit_refusals.codes()]]
    return "\n".join(rows) + "\n"


def shape_table() -> str:
    """The model-shape problems table docs/codes.md must hold, from the classes themselves."""
    rows = ["| code | field | event | when | fields |", "|---|---|---|---|---|"]
    rows += [f"| `{c.code}` | `{'.'.join(c.path) or 'model`, `model.preset` or `model.moe'}` | `{c.__name__}` | {c.summary} | {_fields(c)} |"
             for c in shape_refusals.codes()]
    return "\n".join(rows) + "\n"


def test_the_model_shape_problems_carry_codes_and_fields() -> None:
    from generator.plan.shape import architecture, shape_problems

    classes = shape_refusals.codes()
    assert [c.code for c in classes] == [f"TSH{i:03d}" for i in range(1, len(classes) + 1)]
    spec = Spec.model_validate({"name": "bad-shape", "region": "cn-shanghai", "model": {"preset": "llama-2-7b", "sequence_length": 4095},
                                "parallelism": {"tensor": 3, "pipeline": 40, "expert": 2, "context": 2}})
    found = {p.code: (p.path, dict(p.fields)) for p in shape_problems(spec, architecture(spec))}
    assert found["TSH002"] == (("parallelism", "tensor"), {"tensor": 3, "heads": 32, "kv_heads": 32,
                                                            "ok": (1, 2, 4, 8, 16)})
    assert found["TSH003"][1] == {"expert": 2}
    assert found["TSH006"][1]["context"] == 2 and found["TSH006"][1]["sequence_length"] == 4095
    assert found["TSH009"][1] == {"pipeline": 40, "layers": 32}
    unresolved = shape_refusals.ShapeUnresolved(("model", "moe"), "the sizing model's sentence").problem()
    assert (unresolved.code, unresolved.path, unresolved.message) == ("TSH001", ("model", "moe"),
                                                                      "the sizing model's sentence")


def diff_reason_table() -> str:
    """The diff reasons table docs/codes.md must hold, from the classes themselves."""
    rows = ["| code | impact | event | when | fields |", "|---|---|---|---|---|"]
    rows += [f"| `{c.code}` | {c.impact} | `{c.__name__}` | {c.summary} | {_fields(c)} |" for c in reasons.codes()]
    return "\n".join(rows) + "\n"


def diff_note_table() -> str:
    """The diff notes table docs/codes.md must hold, from the classes themselves."""
    rows = ["| code | event | when | fields |", "|---|---|---|---|"]
    rows += [f"| `{c.code}` | `{c.__name__}` | {c.summary} | {_fields(c)} |" for c in diff_notes.codes()]
    return "\n".join(rows) + "\n"


def check_table() -> str:
    """The spec-check problems table docs/codes.md must hold, from the classes themselves (a field a list item's
    index or a key completes is shown as ``field[...]``; one the event names itself as "the field named")."""
    rows = ["| code | field | event | when | fields |", "|---|---|---|---|---|"]
    for c in spec_refusals.codes():
        field = ".".join(c.path) + ("[...]" if "index" in {f.name for f in dataclasses.fields(c)} or c.path == ("tags",)
                                    else "") if c.path else "the field named"
        rows.append(f"| `{c.code}` | `{field}` | `{c.__name__}` | {c.summary} | {_fields(c)} |")
    return "\n".join(rows) + "\n"


def test_check_codes_are_unique_and_every_check_problem_has_one(tmp_path: Path) -> None:
    classes = spec_refusals.codes()
    assert len({c.code for c in classes}) == len(classes) and all(c.summary for c in classes)
    assert [c.code for c in classes] == [f"TSC{i:03d}" for i in range(1, len(classes) + 1)]
    from generator.plan.check import check

    spec = Spec.model_validate({"name": "bad-check", "region": "cn-nowhere", "zones": ["cn-a", "cn-a"], "model": {
        "preset": "llama-2-7b", "global_batch_tokens": 1024}, "compute": {"gpu": "H800x", "nodes": 9, "max_nodes": 8},
        "checkpoints": {"enabled": False, "bucket": "my-bucket"}, "waivers": [{"rule": "TS999", "reason": "a reason long enough"}]})
    problems = check(spec, CATALOG)
    by_code = {p.code: dict(p.fields) for p in problems}
    assert all(p.code for p in problems), [p.message for p in problems if not p.code]
    assert by_code["TSC003"] == {"region": "cn-nowhere", "close": ""}
    assert by_code["TSC032"]["first"] == 0 and by_code["TSC032"]["index"] == 1
    assert by_code["TSC015"] == {"nodes": 9, "max_nodes": 8}
    assert {"TSC006", "TSC024", "TSC034"} <= by_code.keys()
    assert next(p for p in problems if p.code == "TSC034").path == ("waivers", 0, "rule")


def platform_rule_table() -> str:
    """The platform-rule problems table docs/codes.md must hold, from the classes themselves (Lingjun ``TSJ...``,
    PAI-DLC ``TSA...``; a field a list item's index completes is shown as ``field[...]``)."""
    rows = ["| code | platform | field | event | when | fields |", "|---|---|---|---|---|---|"]
    for c in [*dlc_refusals.codes(), *lingjun_refusals.codes()]:
        field = ".".join(c.path) + ("[...]" if "index" in {f.name for f in dataclasses.fields(c)} else "")
        platform = "PAI-DLC" if c.code.startswith("TSA") else "Lingjun"
        rows.append(f"| `{c.code}` | {platform} | `{field}` | `{c.__name__}` | {c.summary} | {_fields(c)} |")
    return "\n".join(rows) + "\n"


LJ_IMAGE = "i190982651690986913088"


def test_every_problem_the_platform_rules_raise_has_a_code() -> None:
    from generator.platforms.dlc.rules import dlc_rules
    from generator.platforms.lingjun.rules import lingjun_rules

    for module, series in ((lingjun_refusals, "TSJ"), (dlc_refusals, "TSA")):
        classes = module.codes()
        assert [c.code for c in classes] == [f"{series}{i:03d}" for i in range(1, len(classes) + 1)]
        assert all(c.summary and c.path for c in classes)
    base = {"name": "bad-rules", "model": {"parameters": "7B"}}
    dataset = {"source": "oss://corpus-bucket/tok/", "size": "1TiB"}
    lingjun = [  # (region, spec fields)
        ("cn-hangzhou", {"compute": {"platform": "lingjun", "data_disk_gib": 100, "bare_metal": "avoid"},
                         "storage": {"shared": "cpfs", "dataset": dataset}, "spot": {"enabled": True}}),
        ("cn-wulanchabu", {"zones": ["cn-wulanchabu-c"], "storage": {"shared": "extreme-nas"},
                           "compute": {"platform": "lingjun", "image_id": LJ_IMAGE}}),
    ]
    problems = [p for region, extra in lingjun for p in lingjun_rules(
        Spec.model_validate({**base, "region": region, **extra}), CATALOG, CATALOG.region(region))]
    dlc = Spec.model_validate({**base, "region": "cn-hangzhou", "network": {"admin_cidrs": ["192.168.0.0/24"],
        "rdma": True}, "compute": {"platform": "pai-dlc", "image_id": "m-x", "data_disk_gib": 100, "paused": True,
        "bare_metal": "require", "gpu": "A100-40G", "instance_types": ["ecs.gn7i-c8g1.2xlarge", "ecs.ebmgn7ex.32xlarge"]},
        "spot": {"enabled": True, "min_nodes": 1, "strategy": "SpotAsPriceGo", "interruption": "stop"}})
    problems += dlc_rules(dlc, CATALOG, CATALOG.region("cn-hangzhou"))
    no_dlc = dataclasses.replace(CATALOG, dlc_specs=())
    problems += dlc_rules(Spec.model_validate({**base, "region": "cn-hangzhou", "compute": {"platform": "pai-dlc"}}),
                          no_dlc, CATALOG.region("cn-hangzhou"))
    no_types = dataclasses.replace(CATALOG, lingjun_types=())
    problems += lingjun_rules(Spec.model_validate({**base, "region": "cn-wulanchabu", "compute": {
        "platform": "lingjun", "image_id": LJ_IMAGE}}), no_types, CATALOG.region("cn-wulanchabu"))
    assert all(p.code for p in problems), [p.message for p in problems if not p.code]
    planned = {"TSJ011", "TSJ012"}  # raised by the Lingjun planner (test_the_lingjun_planner_raises_codes)
    assert {p.code for p in problems} == {c.code for c in [*lingjun_refusals.codes(), *dlc_refusals.codes()]} - planned
    by_code = {p.code: (p.path, dict(p.fields)) for p in problems}
    assert by_code["TSJ001"] == (("compute", "platform"), {"region": "cn-hangzhou", "regions": ("cn-wulanchabu",)})
    assert by_code["TSJ002"][1] == {"region": "cn-wulanchabu", "regions": ()}
    assert by_code["TSJ003"][1] == {"known": (("cn-wulanchabu-a", "A1"), ("cn-wulanchabu-b", "B1"))}
    assert by_code["TSJ005"][1] == {"gib": 100} and by_code["TSA005"][1] == {"gib": 100}
    assert by_code["TSA003"][0] == ("compute", "instance_types", 1)
    assert by_code["TSA003"][1]["instance_type"] == "ecs.ebmgn7ex.32xlarge"
    assert by_code["TSA002"][1]["gpu"] == "A100-40G" and "A100-80G" in by_code["TSA002"][1]["offered"]
    assert by_code["TSA012"][1] == {"strategy": "SpotAsPriceGo"} and by_code["TSA011"][1] == {"min_nodes": 1}
    assert by_code["TSA001"][1] == {"region": "cn-hangzhou", "regions": ()}


def test_the_lingjun_planner_raises_codes() -> None:
    import pytest

    from generator.plan.fit import PlanningError
    from generator.plan.planner import make_plan

    lj = {"platform": "lingjun", "image_id": LJ_IMAGE}
    small = Spec.model_validate({"name": "lj-small", "region": "cn-wulanchabu", "model": {"parameters": "7B"},
                                 "compute": {**lj, "nodes": 32, "max_nodes": 64}, "network": {"vpc_cidr": "192.168.0.0/24"}})
    paused = Spec.model_validate({"name": "lj-paused", "region": "cn-wulanchabu", "model": {"parameters": "7B"},
                                  "compute": {**lj, "instance_types": ["efg1.nvga1n"], "paused": True}})
    for spec, code in ((small, "TSJ011"), (paused, "TSJ012")):
        with pytest.raises(PlanningError) as e:
            make_plan(spec, CATALOG)
        [p] = e.value.problems
        assert p.code == code and p.hint, p.message
    assert dict(p.fields) == {"machine_type": "efg1.nvga1n"}


def spec_problem_table() -> str:
    """The spec-problems table docs/codes.md must hold, from generator/spec/codes.py."""
    rows = ["| code | event | when | fields |", "|---|---|---|---|"]
    rows += [
        f"| `{c.code}` | `{c.name}` | {c.summary} | {', '.join(f'`{f}`' for f in c.fields) or 'none'} |"
        for c in spec_codes.codes()
    ]
    return "\n".join(rows) + "\n"


def test_codes_are_unique_stable_and_of_a_known_kind() -> None:
    classes = rejections.codes()
    assert len({c.code for c in classes}) == len(classes)
    assert all(c.code.startswith("TSR") and len(c.code) == 6 and c.summary for c in classes)
    assert all(c.KIND in rejections.KINDS for c in classes)


def test_docs_list_every_code() -> None:
    expected = rejection_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the rejections table with\n{expected}"
    expected = refusal_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the refusals table with\n{expected}"
    expected = shape_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the shape table with\n{expected}"
    expected = check_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the check table with\n{expected}"
    expected = warning_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the warnings table with\n{expected}"
    expected = diff_reason_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the diff reasons table with\n{expected}"
    expected = diff_note_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the diff notes table with\n{expected}"
    expected = platform_rule_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the platform rules table with\n{expected}"
    expected = spec_problem_table()
    assert expected in DOC.read_text(encoding="utf-8"), f"docs/codes.md: replace the spec problems table with\n{expected}"
    for basis in PRICE_BASES:
        assert f"`{basis}`" in DOC.read_text(encoding="utf-8")


def test_plan_json_carries_each_rejected_types_reason() -> None:
    data = json.loads((ROOT / "stacks" / "pretrain-70b" / "plan.json").read_text(encoding="utf-8"))
    plan = plan_file(ROOT / "examples" / "pretrain-70b.yaml")
    rejected = [c for c in plan.candidates if c.reason is not None]
    assert rejected and all(not c.nodes for c in rejected)
    by_type = {row["instance_type"]: row for row in data["candidates"]}
    for c in rejected:
        reason = by_type[c.instance_type]["reason"]
        assert (reason["code"], reason["kind"]) == (c.reason.code, c.reason.kind)
        assert reason["fields"].keys() == c.reason.fields().keys()
        assert c.verdict == c.reason.text()  # the words are rendered from the fields
    assert all("reason" not in row for row in data["candidates"] if row["nodes"])  # fitting types rank, not rejected


def test_a_deadline_rejection_carries_the_nodes_it_needs() -> None:
    spec = Spec.model_validate({"name": "tight", "region": "cn-wulanchabu",
                                "model": {"preset": "llama-2-70b", "tokens": "2T"}, "budget": {"max_days": 20},
                                "compute": {"max_nodes": 16}})
    from generator.plan import layout, shape

    region = CATALOG.region(spec.region)
    assert region is not None
    _, rejected = layout.search(spec, CATALOG, region, shape.architecture(spec), None)
    deadline = [r for r in rejected.values() if isinstance(r, rejections.DeadlineNodes)]
    assert deadline and all(r.kind == "deadline" and r.nodes > r.max_nodes == 16 for r in deadline)
    assert all(r.fields()["tokens"] == 2 * 10**12 and r.max_days == 20 for r in deadline)


def test_every_rejection_renders_and_serialises() -> None:
    samples = [
        rejections.NotOffered("cn-x"), rejections.NotOnDlc(), rejections.NoPrecision("bf16", "V100-32G"),
        rejections.NoPrecision("fp8", "A100-80G"), rejections.InviteOnly(), rejections.RdmaRequired(),
        rejections.LingjunBareMetal(), rejections.NoHpnZone((("cn-x-a", "A1"),)), rejections.NotMultiNode(4),
        rejections.NotMultiNode(8), rejections.TensorTooWide(16, 8), rejections.NoTensorDegree(40, 8),
        rejections.ReplicaSplitsNoNodes(8, 4, 3, 8), rejections.DataDegreeNoNodes(3, 8, 1, 4),
        rejections.ReplicaNeedsNodes(8, 8, 8, 4, 8, None), rejections.ReplicaNeedsNodes(8, 8, 8, 1, 4, "gpus"),
        rejections.SizingFailed("x"), rejections.OutOfMemory(2.0**40, 4, 8, 1, "A10", 24.0, 2**34, 0.05, 8, None),
        rejections.DeadlineNodes(10**12, 10.0, 40, 8, 1, 16, 8, None),
        rejections.DeadlineNever(10**12, 10.0, 16, 8, 1, None, 8, "fabric"), rejections.BatchIndivisible(16, 1000, 1),
        rejections.NoLayout((1, 2), (1,), 4), rejections.MultiNodeNeeded(), rejections.NeverFinishes(64),
        rejections.HostMemoryShort("optimizer", 2**40, 2, 8, 1, "ecs.gn7i-c8g1.2xlarge", 30.0, 2**34),
        rejections.ReplicaNeedsNodes(8, 8, 8, 4, 8, None, 2),
    ]
    assert {type(s) for s in samples} == set(rejections.codes())
    for s in samples:
        assert s.text() and json.loads(json.dumps(s.to_dict()))["code"] == s.code
    assert rejections.NoPrecision("bf16", "V100-32G").kind == "bf16"
    assert rejections.NoPrecision("fp8", "A100-80G").kind == "filter"
    assert rejections.DeadlineNever(1, 1.0, 1, 1, 1, None, 8, "fabric").one_node_only
    assert not rejections.DeadlineNodes(1, 1.0, 1, 1, 1, 1, 8, None).one_node_only


def test_price_provenance_is_data() -> None:
    plan = plan_file(ROOT / "examples" / "pretrain-70b.yaml")
    t = CATALOG.instance(plan.compute.instance_type)
    assert plan.cost.basis("compute") == (ESTIMATE if t.price.estimated else LIST_PRICE)
    assert (plan.cost.basis("spot") == ASSUMPTION) == bool(plan.spot.spot_ranks)
    data = json.loads((ROOT / "stacks" / "pretrain-70b" / "plan.json").read_text(encoding="utf-8"))
    assert {p["line"] for p in data["cost"]["prices"]} >= {"compute", "object_storage"}
    assert all(p["basis"] in PRICE_BASES for p in data["cost"]["prices"])
    dlc = plan_file(ROOT / "examples" / "finetune-dlc.yaml")
    assert dlc.cost.basis("dlc_worker") == ESTIMATE and dlc.cost.estimated



def test_plan_json_carries_each_warning_as_code_fields_and_text() -> None:
    for name in ("pretrain-70b", "finetune-dlc", "foundation-1t"):
        data = json.loads((ROOT / "stacks" / name / "plan.json").read_text(encoding="utf-8"))
        plan = plan_file(ROOT / "examples" / f"{name}.yaml")
        assert data["schema_version"] == 2 and plan.warnings
        assert [w["code"] for w in data["warnings"]] == [w.code for w in plan.warnings]
        for row, w in zip(data["warnings"], plan.warnings, strict=True):
            assert row["fields"].keys() == w.fields().keys() and row["text"] == w.text()
    data = json.loads((ROOT / "stacks" / "foundation-1t" / "plan.json").read_text(encoding="utf-8"))
    [tag] = [w for w in data["warnings"] if w["code"] == warns.DataflowBucketTag.code]
    assert tag["fields"] == {"bucket": "corpus-foundation-2026"}  # examples/foundation-1t.yaml: dataset.source


def test_every_warning_renders_and_serialises() -> None:
    samples = [
        warns.MoeSizedDense("deepseek-v3"), warns.HostMemoryLow("ecs.x", 60.0, 96.0, 0.62),
        warns.DeadlineMissed(800.0, 4, 10.0, 20.0, 1.0, 700.0, 30.0, True), warns.RunOverAYear(10_000.0, 1),
        warns.IntervalOverRun(86_400, 3600.0), warns.IntervalOverMtbf(86_400, 12.5), warns.Fp16LossScaling(),
        warns.Fp32Slow(), warns.NotGenerallyAvailable("ecs.gn8v", "invitation"), warns.RdmaOff(4),
        warns.JumboNotEnabled("ecs.x", "no source", 1400), warns.LingjunRdmaOff(), warns.CpfsNotOffered("cn-x"),
        warns.CpfsThroughputShort(1200, 96, 6144, 64, 121_600), warns.DataflowBucketTag("b"),
        warns.WeightsPerNode(4, 2**30), warns.WeightsDiskTight(2**40, 200, 60), warns.DlcWeightsRefetch(2**30),
        warns.SpotAssumed(0.3, 0.05), warns.SpotAllOnDemand(), warns.SpotRankZero(), warns.DlcSpotAssumed(0.3, 0.05),
        warns.CheckpointsExpire(3, 5, 2**30, 2, 14, "b", "p/", "cpfs", "/mnt/shared/ckpt"),
        warns.CheckpointsKeptForever(46, 2**30, None, None, 14, "b", "p/"), warns.SubscriptionPrepaid(2, "lj", 1, 9.5),
        warns.SubscriptionNotDestroyed(), warns.LingjunStock(2, "lj", "cn-x-a", "A1"),
        warns.LingjunGpusUndocumented("lj", 8, "H20"), warns.LingjunNoOssCredentials("run-checkpoints"),
        warns.DlcQuota(2, 1, 8, 2, 8), warns.DlcActivation("cn-x", ("data",)),
        warns.FieldIgnored("network.jumbo_frames", "Lingjun", "the HPN fabric sets its own MTU", ""),
    ]
    assert {type(s) for s in samples} == set(warns.codes())
    assert len({c.code for c in warns.codes()}) == len(warns.codes())
    assert all(c.code.startswith("TSW") and len(c.code) == 6 and c.summary for c in warns.codes())
    for s in samples:
        row = json.loads(json.dumps(s.to_dict()))
        assert s.text() and row["code"] == s.code and row["text"] == s.text()
    assert warns.DlcQuota(2, 1, 8, 2, 8).over == ("CPU cores",)  # two 1-GPU workers: within the GPUs, over the cores
    assert warns.DlcQuota(1, 8, 128, 2, 8).over == ("GPUs", "CPU cores")


def test_every_refusal_renders_as_a_problem_with_its_code_and_fields() -> None:
    samples = [
        refusals.UnknownRegion("cn-x"), refusals.MinNodesOverPlan(9, 8, 2), refusals.MinNodesShort(1, 2, 8, "tp=8 pp=1"),
        refusals.MinNodesSplit(3, 24, "tp=8 pp=2", 2), refusals.BudgetNeedsTokens(),
        refusals.CheapestOverHourly(100.0, 2, "ecs.x", 50.0, "", True), refusals.CheapestOverTotal(1e6, 2, "ecs.x", 1e5, ""),
        refusals.PlanOverTotal(1e6, 9e5, 5e4, 5e4, 1e5), refusals.PlanOverHourly(100.0, 50.0),
        refusals.WeightsNeedShared(4, 2**30), refusals.ModelScopeNoEgress("cn-x"), refusals.DlcWeightsNeedShared(2, 2**30),
        refusals.DlcWeightsNeedBucket(), refusals.ClusterNeedsBucket(4), refusals.NoSharedFileSystem(),
        refusals.CapacityWithoutFileSystem(), refusals.DatasetOverCapacity(2**42, 1200.0, 4800, 400),
        refusals.WeightsOverCapacity(2**40, True, 1200.0, 2400), refusals.StorageClassMismatch("cpfs", "standard"),
        refusals.VpcTooSmall("10.0.0.0/24", 300, "10.0.0.0/25", 120, 4, 3, 121),
        refusals.IpPlanInconsistent(("storage 10.0.0.0/24 overlaps compute 10.0.0.0/17",)),
        refusals.NoStorageVSwitch("cpfs"),
        refusals.MilestoneWindowShort(1.0, 7200),
    ]
    u = unfit_refusals
    interrupted = (64, "ecs.x", 0.25, 6300.0, 64, 5.0, 0.25, 780.0, 5 / 60)
    oom = rejections.OutOfMemory(2.0**40, 1, 8, 1, "A100-80G", 80.0, 76 * 2**30, 0.05, 8, None)
    unfit = ("instance type", 10**12, (("ecs.a", oom), ("ecs.b", rejections.NotOffered("cn-x")), ("ecs.c", oom)),
             True, 1, 10.0, "auto", False, ("parallelism.zero_stage",), True, True, True)
    samples += [
        u.NeverFinishesAtInterval(*interrupted, 30 * 86400), u.NeverFinishesUncheckpointed(*interrupted),
        u.NeverFinishesOnSpot(*interrupted, None, True, 0.25, True, 0, 8),
        u.NeverFinishesFixedNodes(*interrupted, 86400, True), u.NeverFinishesAutoNodes(*interrupted, None, True),
        u.NoTypeFitsNodes(*unfit), u.NoTypeMeetsDeadline(*unfit), u.NoTypeFits(*unfit),
    ]
    classes = [*refusals.codes(), *unfit_refusals.codes()]
    assert {type(s) for s in samples} == set(classes)
    assert len({c.code for c in classes}) == len(classes)
    assert all(c.code.startswith("TSP") and len(c.code) == 6 and c.summary and c.path for c in classes)
    for s in samples:
        p = s.problem()
        assert (p.code, p.path, p.message, p.hint) == (s.code, s.path, s.text(), s.hint()) and p.message
        assert dict(p.fields) == s.fields()
        assert p.located("spec.yaml", 3, 1).fields == p.fields  # the loader's placing keeps them
        assert json.loads(json.dumps(s.fields())).keys() == s.fields().keys()  # data a script reads (JSON)
    [first, *_] = u.NoTypeFits(*unfit).fields()["rejected"]
    assert first == {"instance_type": "ecs.a", **oom.to_dict()}


def test_a_planning_error_carries_its_code_and_fields() -> None:
    import pytest

    from generator.plan.fit import PlanningError

    spec = Spec.model_validate({"name": "elastic", "region": "cn-wulanchabu",
                                "model": {"preset": "llama-2-13b", "tokens": "20B"}, "compute": {"nodes": 2},
                                "spot": {"enabled": True, "min_nodes": 5}})
    from generator.plan.planner import make_plan

    with pytest.raises(PlanningError) as e:
        make_plan(spec, CATALOG)
    [p] = e.value.problems
    assert p.code == refusals.MinNodesOverPlan.code and p.dotted == "spot.min_nodes"
    assert dict(p.fields)["asked"] == 5 and dict(p.fields)["nodes"] == 2


def test_every_diff_reason_renders_and_serialises() -> None:
    samples = [
        reasons.DataDeleted("bucket", True), reasons.DataReplaced("file system", ("storageType",), False),
        reasons.DataUnprotected(("protect",)), reasons.DataExpiresSooner((("expirations", 20.0, None),)),
        reasons.NodeCreated(True), reasons.NodeReleased(), reasons.NodePaused(), reasons.NodeReplaced(("zoneId",)),
        reasons.NodeRebooted(("userData",)), reasons.Created(), reasons.Deleted(), reasons.Replaced(True),
        reasons.Updated(), reasons.GrowUncomparable(("capacity",)),
        reasons.Shrunk((("capacity", 27600, 14400),), "storage.capacity", 27600),
        reasons.FamilyRefused("ecs.ebmgn7ex.32xlarge", "ecs.ebmgn8v.48xlarge"), reasons.NeverApplied(("description",)),
        reasons.NoProviderData(("futureInput",), "data", "bucket"),
    ]
    assert {type(s) for s in samples} == set(reasons.codes())
    assert len({c.code for c in reasons.codes()}) == len(reasons.codes())
    assert all(c.code.startswith("TSD") and len(c.code) == 6 and c.summary for c in reasons.codes())
    assert all(c.impact != "safe" for c in reasons.codes() if c in (reasons.NoProviderData, reasons.GrowUncomparable))
    for s in samples:
        row = json.loads(json.dumps(s.to_dict()))
        assert s.text() and row["code"] == s.code and row["impact"] == s.impact and row["text"] == s.text()


def test_every_diff_note_renders_and_serialises() -> None:
    samples = [
        diff_notes.OtherStack("run/dev", "run2/dev", 11), diff_notes.RegionChanged("cn-hangzhou", "cn-beijing"),
        diff_notes.StackNotDestroyed("run/dev"), diff_notes.OldStackKept("run/dev"),
        diff_notes.NewStackEmpty("run2/dev"), diff_notes.Reshard(8, 1, 4, 2, "tp=8 pp=1 dp=8", "tp=4 pp=2 dp=8"),
    ]
    assert {type(s) for s in samples} == set(diff_notes.codes())
    every = [c.code for c in (*reasons.codes(), *diff_notes.codes())]
    assert len(set(every)) == len(every)  # one family, TSD: a note's code is never a reason's
    assert all(c.code.startswith("TSD") and len(c.code) == 6 and c.summary for c in diff_notes.codes())
    for s in samples:
        row = json.loads(json.dumps(s.to_dict()))
        assert s.text() and row == {"code": s.code, "fields": s.fields(), "text": s.text()}
