"""Diff accuracy against the provider: unset Optional + Computed inputs, instance-type changes across families,
and no "safe" replacement row without a provider source (issue 25).

The graphs are built by hand (no program run), so each rule is checked on the exact values the programs set.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_diff import node

from generator.preview import diff as d
from generator.preview.diff import reasons as why
from generator.preview.diff.replacement import SOURCE_LINE, load_unset
from generator.preview.mockrun import Graph

ROOT = Path(__file__).resolve().parents[1]


def _one(old: dict[str, Any], new: dict[str, Any]) -> d.DiffResult:
    return d.diff_graphs(Graph([node(0, **old)]), Graph([node(0, **new)]))


def test_no_spot_to_unset_is_no_change_either_way() -> None:
    """spot_strategy is Optional + Computed: unset keeps what ECS reports, NoSpot for an on-demand node."""
    assert not _one({"spotStrategy": "NoSpot"}, {}).has_changes
    assert not _one({}, {"spotStrategy": "NoSpot"}).has_changes
    rule = load_unset()[(d.INSTANCE, "spotStrategy")]
    assert rule.computed_default == "NoSpot" and "resource_alicloud_instance.go:463" in rule.source


def test_a_spot_strategy_left_unset_is_never_applied_not_a_silent_on_demand_node() -> None:
    (change,) = _one({"spotStrategy": "SpotAsPriceGo"}, {}).changes
    assert change.impact == "never-applied" and change.properties[0].effect == "ignored"
    assert change.properties[0].note == "provider-keeps" and change.properties[0].old == "SpotAsPriceGo"
    assert change.reasons == (why.NeverApplied(("spotStrategy",)),)


def test_spot_to_on_demand_replaces_the_spot_node() -> None:
    (change,) = _one({"spotStrategy": "SpotAsPriceGo"}, {"spotStrategy": "NoSpot"}).changes
    assert (change.action, change.impact) == ("replace", "replaces-nodes")


def test_an_instance_type_change_in_the_same_family_reboots() -> None:
    (change,) = _one({"instanceType": "ecs.gn8is.4xlarge"}, {"instanceType": "ecs.gn8is.8xlarge"}).changes
    assert change.impact == "restarts-nodes" and change.properties[0].effect == "reboot"


def test_an_instance_type_change_across_gpu_bare_metal_families_fails_at_apply() -> None:
    (change,) = _one({"instanceType": "ecs.ebmgn7ex.32xlarge"}, {"instanceType": "ecs.ebmgn8v.48xlarge"}).changes
    assert (change.action, change.impact) == ("update", "fails-at-apply")
    prop = change.properties[0]
    assert prop.effect == "fails-at-apply" and "DescribeResourcesModification" in prop.source
    assert "instance-families-that-support-instance-type-changes" in prop.source
    assert change.reasons == (why.FamilyRefused("ecs.ebmgn7ex.32xlarge", "ecs.ebmgn8v.48xlarge"),)


def test_a_cross_family_change_together_with_a_replacement_is_just_a_new_node() -> None:
    (change,) = _one({"instanceType": "ecs.ebmgn7ex.32xlarge", "spotStrategy": "SpotAsPriceGo"},
                     {"instanceType": "ecs.ebmgn8v.48xlarge", "spotStrategy": "NoSpot"}).changes
    assert (change.action, change.impact) == ("replace", "replaces-nodes")
    assert {p.name: p.effect for p in change.properties}["instanceType"] == "in-place"


def test_no_row_calls_a_change_harmless_without_the_provider_file_and_line() -> None:
    rules = d.load_rules()
    harmless = {k: r for k, r in rules.items() if r.effect in ("in-place", "ignored", "grow-only")}
    assert harmless and all(SOURCE_LINE.search(r.source) for r in harmless.values())
    unverified = {k for k, r in rules.items() if r.source.startswith(("UNVERIFIED", "UNCERTAIN"))}
    assert all(rules[k].effect in ("unknown", "replace") for k in unverified), sorted(unverified)
    assert rules[(d.INSTANCE, "instanceMetadataTags")].effect == "unknown"
    assert rules[("alicloud:ram/user:User", "tags")].effect == "unknown"


def test_an_unverified_unknown_row_reads_as_a_possible_replacement() -> None:
    (change,) = _one({}, {"instanceMetadataTags": "enabled"}).changes
    assert change.impact == "unknown" and change.reasons == (why.NoProviderData(("instanceMetadataTags",), "node"),)


@pytest.mark.parametrize("rendered", ["stacks/finetune-7b/__main__.py", "stacks/pretrain-70b/__main__.py"])
def test_every_ecs_program_says_its_spot_strategy(rendered: str) -> None:
    """Leaving spot_strategy unset would keep a spot node spot (Optional + Computed), so it is always written."""
    text = (ROOT / rendered).read_text()
    if "alicloud.ecs.Instance(" in text:
        assert re.search(r"spot_strategy=", text)


# The provider release pulumi_alicloud's docstrings cite last ("Available since v1.295.0"), and the source the
# replacement data was re-checked against (docs/gitops.md, "Which provider version"). A new pulumi_alicloud bridges
# a newer provider: this fails until the data has been re-read and the two constants updated.
BRIDGED = (1, 295, 0)
CHECKED_AGAINST = "81c43b6727"


def test_the_replacement_data_was_checked_for_the_provider_pulumi_alicloud_bridges() -> None:
    import importlib.util

    spec = importlib.util.find_spec("pulumi_alicloud")  # its files are read, not imported (importing is slow)
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent
    cited = {tuple(int(x) for x in m) for f in folder.rglob("*.py")
             for m in re.findall(r"\bv1\.(\d{3})\.(\d+)\b", f.read_text(encoding="utf-8", errors="replace"))}
    newest = max((1, *v) for v in cited)
    assert newest == BRIDGED, (f"pulumi_alicloud now cites provider v{'.'.join(map(str, newest))}: re-check "
                               "generator/preview/data/replacement/ against that provider source, then update BRIDGED")
    sources = [r.source for r in d.load_rules().values()]
    assert sum(CHECKED_AGAINST in s for s in sources) > 200  # most rows cite the newest provider source read


def _bucket(rules: list[dict[str, Any]]) -> Graph:
    from generator.preview.mockrun import Resource

    return Graph([Resource("alicloud:oss/bucket:Bucket", "checkpoints", {"bucket": "b", "lifecycleRules": rules})])


_NONCURRENT = {"id": "nc", "enabled": True, "noncurrentVersionExpirations": [{"days": 14}]}


def test_a_lifecycle_rule_that_expires_checkpoints_sooner_puts_data_at_risk() -> None:
    """checkpoints.keep_last adds an expiry of current objects: an in-place update that deletes by age."""
    keep = {"id": "keep", "enabled": True, "prefix": "checkpoints/", "expirations": [{"days": 20}]}
    (change,) = d.diff_graphs(_bucket([_NONCURRENT]), _bucket([_NONCURRENT, keep])).changes
    assert change.action == "update" and change.impact == "data-at-risk"
    assert change.reasons == (why.DataExpiresSooner((("expirations", 20.0, None),)),)
    shorter = {**_NONCURRENT, "noncurrentVersionExpirations": [{"days": 3}]}
    (change,) = d.diff_graphs(_bucket([_NONCURRENT]), _bucket([shorter])).changes
    assert change.reasons == (why.DataExpiresSooner((("noncurrentVersionExpirations", 3.0, 14.0),)),)


def test_a_lifecycle_rule_that_keeps_data_longer_or_is_paused_is_not_data_at_risk() -> None:
    keep = {"id": "keep", "enabled": True, "prefix": "checkpoints/", "expirations": [{"days": 20}]}
    paused = {**keep, "enabled": False}
    longer = {**keep, "expirations": [{"days": 40}]}
    for base, head in (([_NONCURRENT, keep], [_NONCURRENT, paused]), ([_NONCURRENT, keep], [_NONCURRENT, longer]),
                       ([_NONCURRENT, paused], [_NONCURRENT])):
        (change,) = d.diff_graphs(_bucket(base), _bucket(head)).changes
        assert change.impact != "data-at-risk", (base, head)
