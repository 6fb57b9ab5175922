"""Coverage of the replacement data: every input the generated programs set has a row, and every row cites the
provider source by file and line.

The programs are the three examples and the variants the cluster tests render (Lingjun, Extreme NAS, SCC/HPC,
spot with a price limit and a single ERI), run under the mock runtime with the real SDK (~1 s each). An input
without a row reads as ``unknown`` in ``trainstack diff``; that is honest, but a reviewer is better served by
data, so a missing row fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from test_cluster import ERI_SPOT_SPEC, EXTREME_NAS_SPEC, SCC_SPEC
from test_lingjun import LINGJUN_SPEC, LINGJUN_SUBSCRIPTION_SPEC

from generator import api
from generator.preview import diff as d

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("finetune-7b", "pretrain-70b", "foundation-1t", "finetune-dlc")
VARIANTS = {"lingjun": LINGJUN_SPEC, "lingjun-subscription": LINGJUN_SUBSCRIPTION_SPEC,
            "extreme-nas": EXTREME_NAS_SPEC, "scc-hpc": SCC_SPEC, "spot-price-limit-single-eri": ERI_SPOT_SPEC}
REGENERATION = ("the replacement data is being regenerated from the provider's Go source into "
                "generator/preview/data/replacement/*.csv (issue #11); remove this mark when it lands")
# A row's source names the provider file and line: terraform-provider-alicloud's resource_alicloud_*.go:LINE.
SOURCE_LINE = re.compile(r"alicloud/resource_alicloud_\w+\.go:\d+")


def _inputs(graphs: Iterable[object]) -> set[tuple[str, str]]:
    return {(r.type, name) for g in graphs for r in g.resources for name in r.inputs}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    """Every (type token, camelCase input) that the examples and the tested variants set."""
    specs = [ROOT / "examples" / f"{name}.yaml" for name in EXAMPLES]
    folder = tmp_path_factory.mktemp("variants")
    for name, text in VARIANTS.items():
        spec = folder / f"{name}.yaml"
        spec.write_text(text)
        specs.append(spec)
    return _inputs(api.preview(spec).graph for spec in specs)


def test_the_programs_exercise_every_provider_family(emitted: set[tuple[str, str]]) -> None:
    """A guard for the coverage test below: the variants really render ECS, VPC, NAS, OSS, RAM and eflo."""
    families = {token.split(":")[1].split("/")[0] for token, _ in emitted}
    assert {"ecs", "vpc", "nas", "oss", "ram", "eflo", "pai"} <= families
    types = {token for token, _ in emitted}
    assert {"alicloud:ecs/hpcCluster:HpcCluster", "alicloud:nas/mountTarget:MountTarget",
            "alicloud:eflo/node:Node", "alicloud:pai/workspaceDataset:WorkspaceDataset"} <= types  # SCC, NAS, Lingjun, DLC
    assert ("alicloud:ecs/instance:Instance", "spotPriceLimit") in emitted


def test_every_input_the_programs_set_has_a_replacement_row(emitted: set[tuple[str, str]]) -> None:
    rules = d.load_rules()
    missing = sorted(pair for pair in emitted if pair not in rules)
    listing = "\n".join(f"  {token},{prop}" for token, prop in missing)
    assert not missing, (f"{len(missing)} inputs the templates set have no row in "
                         f"generator/preview/data/replacement/ (trainstack diff reads them as unknown):\n{listing}")


def test_every_row_cites_a_provider_file_and_line() -> None:
    rules = d.load_rules()
    # A row either cites the provider's file and line, or says plainly that it could not be verified (the input
    # is in pulumi_alicloud 4.0.0 but in no stored provider source); those stay few and are listed in the docs.
    flagged = {key for key, rule in rules.items() if rule.source.startswith(("UNVERIFIED", "UNCERTAIN"))}
    assert len(flagged) <= 5, sorted(flagged)
    vague = sorted(f"  {token},{prop}: {rule.source}" for (token, prop), rule in rules.items()
                   if not SOURCE_LINE.search(rule.source) and (token, prop) not in flagged)
    assert not vague, (f"{len(vague)} rows do not cite alicloud/resource_alicloud_*.go:<line>:\n"
                       + "\n".join(vague))
