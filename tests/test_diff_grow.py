"""The diff decides grow-only inputs by value: a larger CPFS capacity or system disk updates in place, a smaller
one is ``fails-at-apply`` (the cloud refuses it), a value it cannot compare is ``unknown``; never ``safe``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from generator.cli import main
from generator.preview import diff as d
from generator.preview.diff import reasons as why
from generator.preview.mockrun import Resource
from tests.test_diff import FS, INSTANCE, cluster, file_system, only, replace_resource

ROOT = Path(__file__).resolve().parent.parent


def test_grow_only_is_a_data_effect_and_its_rows_cite_the_apis_that_refuse_a_shrink() -> None:
    assert "grow-only" in d.DATA_EFFECTS and "fails-at-apply" in d.EFFECTS
    assert "fails-at-apply" not in d.DATA_EFFECTS  # decided by value, never written in the data
    rules = d.load_rules()
    capacity, disk = rules[(FS, "capacity")], rules[(INSTANCE, "systemDiskSize")]
    assert capacity.effect == disk.effect == "grow-only"
    assert "api-upgradefilesystem" in capacity.source and "resizedisk" in disk.source


def test_the_class_order_ranks_a_refused_change_above_doubt() -> None:
    order = d.IMPACTS
    assert order.index("replaces-nodes") < order.index("fails-at-apply") < order.index("never-applied")
    assert order.index("fails-at-apply") < order.index("unknown") < order.index("safe")
    assert "only grow" in d.IMPACT_TITLES["fails-at-apply"]


def test_a_smaller_cpfs_capacity_fails_at_apply_in_every_format() -> None:
    result = d.diff_graphs(cluster(capacity=27600), cluster(capacity=14400))
    (change,) = result.changes
    (prop,) = change.properties
    assert (change.action, change.impact, prop.effect) == ("update", "fails-at-apply", "fails-at-apply")
    assert result.worst_impact == "fails-at-apply"
    assert prop.note == "smaller"
    assert change.reasons == (why.Shrunk((("capacity", 27600, 14400),), "storage.capacity", 27600),)

    text = d.format_text(result)
    assert "Worst impact: fails-at-apply" in text and "[fails-at-apply]" in text and "safe (" not in text
    markdown = d.format_markdown(result)
    assert "### trainstack diff: ⛔ fails-at-apply" in markdown
    assert f"| ⛔ fails-at-apply | 1 | {d.IMPACT_TITLES['fails-at-apply']} |" in markdown
    payload = json.loads(d.format_json(result))
    assert payload["schema_version"] == 5
    assert payload["summary"]["worst_impact"] == "fails-at-apply"
    assert payload["summary"]["by_impact"]["fails-at-apply"] == 1
    assert payload["changes"][0]["properties"][0]["effect"] == "fails-at-apply"
    assert payload["changes"][0]["properties"][0]["note"] == "smaller"
    (reason,) = payload["changes"][0]["reasons"]
    assert (reason["code"], reason["impact"]) == (why.Shrunk.code, "fails-at-apply")
    assert reason["fields"] == {"shrunk": [["capacity", 27600, 14400]], "spec_field": "storage.capacity", "keep": 27600}
    assert [i["impact"] for i in payload["impacts"]] == list(d.IMPACTS)


def test_a_larger_capacity_is_safe_and_an_equal_one_is_no_change() -> None:
    (change,) = d.diff_graphs(cluster(capacity=14400), cluster(capacity=27600)).changes
    assert (change.impact, change.properties[0].effect) == ("safe", "in-place")
    assert not d.diff_graphs(cluster(capacity=14400), cluster(capacity=14400)).has_changes


def test_an_uncomparable_grow_only_value_is_unknown_not_safe() -> None:
    base = cluster()
    fs = file_system()
    no_capacity = Resource(fs.type, fs.name, {k: v for k, v in fs.inputs.items() if k != "capacity"},
                           protect=True, retain_on_delete=True)
    unset = replace_resource(base, no_capacity)
    for old, new in ((base, unset), (unset, base)):
        (change,) = d.diff_graphs(old, new).changes
        assert (change.impact, change.properties[0].effect) == ("unknown", "unknown")
        assert change.properties[0].note == "uncomparable"
        assert change.reasons == (why.GrowUncomparable(("capacity",)),)  # not NoProviderData: the data has a row


def test_a_smaller_system_disk_fails_at_apply_and_names_the_spec_field() -> None:
    result = d.diff_graphs(cluster(nodes=2, systemDiskSize=500), cluster(nodes=2, systemDiskSize=200))
    assert {c.impact for c in result.changes} == {"fails-at-apply"}
    assert result.changes[0].reasons == (why.Shrunk((("systemDiskSize", 500, 200),), "compute.system_disk_gib", 500),)
    grown = d.diff_graphs(cluster(nodes=2, systemDiskSize=200), cluster(nodes=2, systemDiskSize=500))
    assert {c.impact for c in grown.changes} == {"safe"}


def test_a_replaced_file_system_is_created_with_the_smaller_capacity() -> None:
    base = cluster(capacity=27600)
    head = replace_resource(cluster(capacity=14400), file_system(capacity=14400, storage_type="advance_200"))
    fs = only(d.diff_graphs(base, head), "shared-fs")
    assert (fs.action, fs.impact) == ("replace", "data-at-risk")
    capacity = next(p for p in fs.properties if p.name == "capacity")
    assert (capacity.effect, capacity.note) == ("in-place", "set-on-new")
    assert [r.code for r in fs.reasons] == [why.DataReplaced.code]


def test_shrinking_the_dataset_of_the_cpfs_example_is_caught_end_to_end(tmp_path: Path) -> None:
    """The planner sizes CPFS from the dataset (capacity auto): a smaller dataset asks for a smaller file system."""
    spec = (ROOT / "examples" / "pretrain-70b.yaml").read_text()
    assert "size: 20TiB" in spec
    smaller = tmp_path / "pretrain-70b.yaml"
    smaller.write_text(spec.replace("size: 20TiB", "size: 10TiB"))
    out = tmp_path / "diff.json"
    result = CliRunner().invoke(main, ["diff", str(ROOT / "examples" / "pretrain-70b.yaml"), str(smaller),
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code == 2, result.output
    payload = json.loads(out.read_text())
    assert payload["summary"]["worst_impact"] == "fails-at-apply"
    (fs,) = [c for c in payload["changes"] if c["type"] == FS]
    assert fs["impact"] == "fails-at-apply" and fs["properties"][0]["old"] > fs["properties"][0]["new"]
    assert [r["code"] for r in fs["reasons"]] == [why.Shrunk.code] and fs["reasons"][0]["fields"]["spec_field"]
