"""Node names have one home (generator/plan/naming.py) and are stable at any size: growing a cluster renames no
node, also past a change in the rank's digit count (999 -> 1,000 and 512 -> 1,024 nodes), on ECS and on Lingjun
(whose node-init.sh writes the hostfile with printf), and a name reads back to its rank."""

from __future__ import annotations

import subprocess

import pytest

from generator.catalog import load_catalog
from generator.plan import naming
from generator.plan.model import Plan
from generator.plan.planner import make_plan
from generator.render.files import render
from generator.spec.model import Spec

IMAGE = "i190982651690986913088"  # the image id of the provider's eflo examples (as tests/test_lingjun.py)


def ecs_plan(nodes: int) -> Plan:
    doc = {
        "name": "big",
        "region": "cn-wulanchabu",
        "model": {"parameters": "13B", "sequence_length": 4096},
        "compute": {"nodes": nodes},
    }
    return make_plan(Spec.model_validate(doc), load_catalog())


def lingjun_plan(nodes: int) -> Plan:
    doc = {
        "name": "lj-run",
        "region": "cn-wulanchabu",
        "model": {"preset": "llama-2-70b", "tokens": "20B"},
        "compute": {"platform": "lingjun", "image_id": IMAGE, "nodes": nodes},
        "network": {"vpc_cidr": "10.8.0.0/16"},
    }
    return make_plan(Spec.model_validate(doc), load_catalog())


def test_the_rule() -> None:
    assert naming.node_name("c", 0) == "c-node-000"
    assert naming.node_name("c", 999) == "c-node-999"
    assert naming.node_name("c", 1000) == "c-node-1000"
    assert naming.node_name("c", 12345) == "c-node-12345"
    with pytest.raises(ValueError):
        naming.node_name("c", -1)


@pytest.mark.parametrize("rank", [0, 7, 99, 511, 999, 1000, 1023, 40000])
def test_a_name_reads_back_to_its_rank(rank: int) -> None:
    assert naming.node_rank("pre-train", naming.node_name("pre-train", rank)) == rank


@pytest.mark.parametrize(
    "name",
    ["c-node-00", "c-node-0000", "c-node-0999", "c-node-", "c-node-1a", "d-node-001", "c-node-001-role"],
)
def test_other_names_have_no_rank(name: str) -> None:
    assert naming.node_rank("c", name) is None


@pytest.mark.parametrize(("small", "big"), [(999, 1000), (512, 1024)])
def test_growing_an_ecs_cluster_renames_no_node(small: int, big: int) -> None:
    before, after = ecs_plan(small).compute.ranks, ecs_plan(big).compute.ranks
    assert len(before) == small and len(after) == big
    assert [(r.rank, r.name, r.private_ip) for r in before] == [
        (r.rank, r.name, r.private_ip) for r in after[:small]
    ]
    assert after[-1].name == naming.node_name("big", big - 1)


def test_growing_a_lingjun_cluster_past_999_renames_no_node_and_node_init_agrees() -> None:
    before, after = lingjun_plan(999), lingjun_plan(1000)
    assert [r.name for r in before.compute.ranks] == [r.name for r in after.compute.ranks[:999]]
    # node-init.sh writes the same names into the hostfile (printf in bash) as the plan gives the nodes
    script = render(after)["node-init.sh"]
    line = next(ln for ln in script.splitlines() if "printf 'lj-run-node-" in ln)
    fmt = line.strip().split("'")[1]
    printed = subprocess.run(
        ["bash", "-c", f"for i in 0 998 999 1000; do printf '{fmt}' \"$i\"; done"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert [p.split()[0] for p in printed] == [after.compute.ranks[i].name for i in (0, 998, 999)] + [
        "lj-run-node-1000"
    ]
