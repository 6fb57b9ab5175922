"""Jumbo frames by the catalog and the IP plan (issue #11): planner decisions and properties (pure), and the rendered
program under Pulumi's mock runtime."""

from __future__ import annotations

import base64
import gzip
import ipaddress
import itertools
import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import api
from generator.catalog import load_catalog
from generator.plan import warns
from generator.plan.fit import PlanningError
from generator.plan.placement import NODE_OFFSET, PROTOCOL_SERVICE_ADDRESSES, RESERVED_LAST, ip_plan
from generator.plan.planner import make_plan
from generator.preview.mockrun import run_program
from generator.spec.model import Spec

INSTANCE = "alicloud:ecs/instance:Instance"
SWITCH = "alicloud:vpc/switch:Switch"


def plan(**overrides):
    doc = {"name": "net-run", "region": "cn-wulanchabu", "model": {"parameters": "13B", "sequence_length": 4096}}
    doc.update(overrides)
    return make_plan(Spec.model_validate(doc), load_catalog())


def decision(p, topic: str):
    return next(d for d in p.decisions if d.topic == topic)


# ------------------------------------------------------------------------------------------------ jumbo frames


def test_catalog_jumbo_support_per_family_with_a_source():
    cat = load_catalog()
    assert cat.jumbo("ebmgn7ex").support == "unknown"  # not named by any source read
    assert cat.jumbo("gn8v").support == "yes" and cat.jumbo("gn8v").basis == "named"
    for t in cat.instance_types:  # every ECS type carries its family's support and the tags behind it
        assert t.jumbo_frames == cat.jumbo(t.family).support and t.jumbo_source == cat.jumbo(t.family).source
    assert cat.source("DOC-JUMBO").url.startswith("https://")


def test_ebmgn7ex_gets_mtu_1400_unless_a_source_says_otherwise():
    cat = load_catalog()
    p = plan(compute={"instance_types": ["ecs.ebmgn7ex.32xlarge"], "nodes": 2})
    assert p.compute.rdma == "erdma"
    if cat.jumbo("ebmgn7ex").support != "yes":
        assert p.network.mtu == 1400 and not p.network.jumbo_frames
    mtu = decision(p, "mtu")
    assert mtu.choice == str(p.network.mtu)
    assert "ebmgn7ex" in mtu.reason and cat.jumbo("ebmgn7ex").source in mtu.reason
    assert p.network.jumbo_source == cat.jumbo("ebmgn7ex").source
    assert not _jumbo(p)  # the spec did not ask for jumbo frames explicitly


def test_documented_family_gets_jumbo_frames_and_mtu_8500():
    p = plan(compute={"instance_types": ["ecs.gn8v-8x.48xlarge"], "nodes": 2})
    assert p.compute.family == "gn8v" and p.compute.rdma == "erdma"
    assert p.network.jumbo_frames and p.network.mtu == 8500
    assert "gn8v" in decision(p, "mtu").reason and "DOC-GPU-EN" in decision(p, "mtu").reason


def test_documented_family_with_jumbo_frames_off_gets_1400():
    p = plan(compute={"instance_types": ["ecs.gn8v-8x.48xlarge"], "nodes": 2}, network={"jumbo_frames": False})
    assert not p.network.jumbo_frames and p.network.mtu == 1400
    assert not _jumbo(p)


def test_asking_for_jumbo_frames_on_an_undocumented_family_is_a_warning_not_an_error():
    p = plan(compute={"instance_types": ["ecs.ebmgn7ex.32xlarge"], "nodes": 2}, network={"jumbo_frames": True})
    assert p.network.mtu == 1400 and not p.network.jumbo_frames
    (warning,) = _jumbo(p)
    assert (warning.instance_type, warning.mtu) == ("ecs.ebmgn7ex.32xlarge", 1400)
    assert "ebmgn7ex" in warning.why and load_catalog().jumbo("ebmgn7ex").source in warning.why  # why, with the catalog's source


def _jumbo(p) -> list[warns.JumboNotEnabled]:
    return [w for w in p.warnings if isinstance(w, warns.JumboNotEnabled)]


def test_no_erdma_no_mtu_decision():
    p = plan(compute={"instance_types": ["ecs.gn8v-8x.48xlarge"], "nodes": 1})
    assert p.compute.rdma == "none" and not p.network.jumbo_frames and p.network.mtu == 1500
    assert not any(d.topic == "mtu" for d in p.decisions)


# ------------------------------------------------------------------------------------------------ IP plan


def _span(r) -> tuple[int, int]:
    return int(ipaddress.ip_address(r.first)), int(ipaddress.ip_address(r.last))


def _check(vpc: ipaddress.IPv4Network, nodes: int, storage: bool, egress: bool) -> None:
    vswitches, ranges, _ = ip_plan("p", "z", vpc, nodes, storage=storage, egress=egress)
    nets = {v.key: ipaddress.ip_network(v.cidr) for v in vswitches}
    assert set(nets) == {"compute"} | ({"storage"} if storage else set()) | ({"egress"} if egress else set())
    keys = list(nets)
    for i, a in enumerate(keys):
        assert nets[a].subnet_of(vpc)
        for b in keys[i + 1:]:
            assert not nets[a].overlaps(nets[b]), (a, b)
    for r in ranges:  # every range lies in its vSwitch, and no two ranges share an address
        lo, hi = _span(r)
        assert int(nets[r.vswitch].network_address) <= lo <= hi <= int(nets[r.vswitch].broadcast_address)
        assert r.addresses == hi - lo + 1
    spans = sorted(_span(r) for r in ranges)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    # each vSwitch is covered exactly, end to end
    assert sum(r.addresses for r in ranges) == sum(n.num_addresses for n in nets.values())
    (node_range,) = [r for r in ranges if "node(s)" in r.consumer]
    lo, hi = _span(node_range)
    compute = nets["compute"]
    assert lo == int(compute.network_address) + NODE_OFFSET and hi - lo + 1 == nodes
    assert hi <= int(compute.broadcast_address) - RESERVED_LAST
    if storage:  # the protocol service's range never holds a node address, and holds its 32 addresses
        (service,) = [r for r in ranges if r.vswitch == "storage" and "protocol service" in r.consumer]
        s_lo, s_hi = _span(service)
        assert s_hi < lo or s_lo > hi
        assert service.addresses >= PROTOCOL_SERVICE_ADDRESSES


@st.composite
def vpcs(draw) -> ipaddress.IPv4Network:
    base = draw(st.sampled_from([ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]))
    prefix = draw(st.integers(min_value=max(8, base.prefixlen), max_value=24))
    index = draw(st.integers(min_value=0, max_value=2 ** (prefix - base.prefixlen) - 1))
    size = 2 ** (32 - prefix)
    return ipaddress.ip_network(f"{ipaddress.ip_address(int(base.network_address) + index * size)}/{prefix}")


def _max_nodes(vpc: ipaddress.IPv4Network) -> int:
    return 2 ** (32 - (vpc.prefixlen + 1)) - NODE_OFFSET - RESERVED_LAST  # the compute vSwitch is at most half the VPC


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vpc=vpcs(), fraction=st.floats(min_value=0.0, max_value=1.0), storage=st.booleans(), egress=st.booleans())
def test_ip_ranges_are_disjoint_for_every_node_count_and_vpc(vpc, fraction, storage, egress):
    nodes = 1 + int(fraction * (_max_nodes(vpc) - 1))
    _check(vpc, nodes, storage, egress)


@pytest.mark.parametrize("cidr", ["10.0.0.0/24", "192.168.4.0/23", "10.20.0.0/16", "172.16.0.0/12"])
def test_ip_plan_at_the_edges(cidr: str):
    vpc = ipaddress.ip_network(cidr)
    for nodes in (1, 2, _max_nodes(vpc)):
        _check(vpc, nodes, True, True)
    with pytest.raises(PlanningError) as e:
        ip_plan("p", "z", vpc, _max_nodes(vpc) + 1, storage=True, egress=True)
    assert e.value.problems[0].dotted == "network.vpc_cidr" and "too small" in e.value.problems[0].message


def test_compute_vswitch_keeps_its_cidr_from_earlier_versions():
    # the compute vSwitch (and so every node) must not move when trainstack is upgraded
    for cidr, nodes, expected in (("10.20.0.0/16", 64, "10.20.0.0/20"), ("10.64.0.0/16", 256, "10.64.0.0/20"),
                                  ("10.0.0.0/16", 4040, "10.0.0.0/20"), ("10.0.0.0/16", 4041, "10.0.0.0/19"),
                                  ("10.0.0.0/22", 8, "10.0.0.0/24")):
        vswitches, _, _ = ip_plan("p", "z", ipaddress.ip_network(cidr), nodes, storage=True, egress=True)
        assert vswitches[0].key == "compute" and vswitches[0].cidr == expected


def test_plan_carries_the_ip_plan_and_node_addresses_in_the_compute_range():
    p = plan(compute={"nodes": 4}, network={"vpc_cidr": "10.30.0.0/16"}, storage={"shared": "cpfs"})
    d = decision(p, "ip plan")
    assert d.choice == "compute 10.30.0.0/20, storage 10.30.255.192/26, egress 10.30.255.128/27"
    assert "DOC-CPFS-PS" in d.reason and "DOC-VSW-RESERVED" in d.reason
    (node_range,) = [r for r in p.network.ip_plan if "node(s)" in r.consumer]
    first = ipaddress.ip_address(node_range.first)
    assert [n.private_ip for n in p.compute.ranks] == [str(first + i) for i in range(4)]
    assert p.storage.service_vswitch == "storage" and p.storage.vswitch == "compute"
    assert json.loads(p.to_json())["network"]["ip_plan"]


def test_no_shared_storage_no_storage_vswitch_and_no_egress_no_egress_vswitch():
    p = plan(compute={"nodes": 1}, storage={"shared": "none"}, network={"egress": "none"})
    assert [v.key for v in p.network.vswitches] == ["compute"]


def test_auto_storage_and_the_storage_vswitch_agree():
    for nodes, dataset in ((1, None), (2, None), (1, {"source": "oss://dataset-bucket/tokens/", "size": "100GiB"})):
        storage = {"shared": "auto"} | ({"dataset": dataset} if dataset else {})
        p = plan(compute={"nodes": nodes}, storage=storage)
        assert (p.storage.kind != "none") == any(v.key == "storage" for v in p.network.vswitches)


# ------------------------------------------------------------------------------------------------ mock runtime


def build(tmp_path: Path, body: str):
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(body))
    result = api.render_stack(spec, tmp_path / "stack")
    p = json.loads((result.dest / "plan.json").read_text())
    graph = run_program(result.dest, project=p["name"], stack=p["stack"], config={"alicloud:region": p["region"]})
    return p, graph


def _switch_ids(g) -> dict[str, str]:
    return {r.name.removeprefix("vswitch-"): f"{r.name}-id" for r in g.of_type(SWITCH)}


def _script(node) -> str:
    return gzip.decompress(base64.b64decode(node.get("user_data"))).decode()


def test_cpfs_protocol_service_and_nat_are_outside_the_nodes_vswitch(tmp_path: Path):
    p, g = build(tmp_path, """
        name: ipplan-run
        region: cn-wulanchabu
        model: {parameters: 13B, sequence_length: 4096}
        compute: {instance_types: [ecs.ebmgn7ex.32xlarge], nodes: 2}
        network: {vpc_cidr: 10.40.0.0/16, jumbo_frames: true}
        storage: {shared: cpfs}
    """)
    ids = _switch_ids(g)
    assert set(ids) == {"compute", "storage", "egress"}
    cidrs = {r.name.removeprefix("vswitch-"): r.get("cidr_block") for r in g.of_type(SWITCH)}
    assert cidrs == {v["key"]: v["cidr"] for v in p["network"]["vswitches"]}
    service = g.one("alicloud:nas/protocolService:ProtocolService")
    assert service.get("vswitch_id") == ids["storage"]
    assert g.one("alicloud:nas/protocolMountTarget:ProtocolMountTarget").get("vswitch_id") == ids["storage"]
    assert g.one("alicloud:nas/fileSystem:FileSystem").get("vswitch_id") == ids["compute"]  # cannot move: ForceNew
    assert g.one("alicloud:vpc/natGateway:NatGateway").get("vswitch_id") == ids["egress"]
    assert g.one("alicloud:vpc/snatEntry:SnatEntry").get("source_vswitch_id") == ids["compute"]
    nodes = g.of_type(INSTANCE)
    assert nodes and all(n.get("vswitch_id") == ids["compute"] for n in nodes)
    storage_net = ipaddress.ip_network(cidrs["storage"])
    assert all(ipaddress.ip_address(n.get("private_ip")) not in storage_net for n in nodes)
    # ebmgn7ex: no documented jumbo frames, so no enable_jumbo_frame and MTU 1400 in the bootstrap
    assert all(n.get("enable_jumbo_frame") is None for n in nodes)
    assert all('mtu 1400' in _script(n) for n in nodes)  # trainstack-boot sets it at every boot
    assert warns.JumboNotEnabled.code in [w["code"] for w in p["warnings"]]


def test_nodes_get_jumbo_frames_only_on_a_documented_family(tmp_path: Path):
    p, g = build(tmp_path, """
        name: jumbo-run
        region: cn-wulanchabu
        model: {parameters: 30B, sequence_length: 4096}
        compute: {instance_types: [ecs.gn8v-8x.48xlarge], nodes: 2}
        network: {egress: none}
    """)
    assert p["network"]["mtu"] == 8500
    nodes = g.of_type(INSTANCE)
    assert nodes and all(n.get("enable_jumbo_frame") is True for n in nodes)
    assert all('mtu 8500' in _script(n) for n in nodes)
    assert "egress" not in _switch_ids(g) and not g.of_type("alicloud:vpc/natGateway:NatGateway")


def test_extreme_nas_mount_target_is_in_the_storage_vswitch(tmp_path: Path):
    _, g = build(tmp_path, """
        name: nas-ip-run
        region: cn-wulanchabu
        model: {parameters: 13B, sequence_length: 4096}
        compute: {nodes: 2}
        storage: {shared: extreme-nas}
    """)
    ids = _switch_ids(g)
    assert g.one("alicloud:nas/mountTarget:MountTarget").get("vswitch_id") == ids["storage"]


# ------------------------------------------------------------------------------------------------ catalog checks


def _catalog_copy(tmp_path: Path) -> Path:
    import shutil

    from generator.catalog import load as catalog_load

    dest = tmp_path / "v1"
    shutil.copytree(catalog_load._DEFAULT_DIR, dest)
    return dest


@pytest.mark.parametrize("edit, message", [
    (lambda text: text.replace("gn8v,yes,named,", "gn8v,yes,not-listed,"),
     "basis not-listed allows jumbo_frames unknown"),
    (lambda text: text.replace("gn8v,yes,named,", "gn8v,maybe,named,"), "jumbo_frames must be one of"),
    (lambda text: "\n".join(line for line in text.splitlines() if not line.startswith("gn8v,")) + "\n",
     "no row for the families ['gn8v']"),
    (lambda text: text + "g8i,yes,named,DOC-JUMBO,a CPU family\n", "not in instance_types.csv"),
])
def test_loader_refuses_a_bad_jumbo_row(tmp_path: Path, edit, message: str):
    from generator.catalog import CatalogError

    root = _catalog_copy(tmp_path)
    path = root / "jumbo_frames.csv"
    path.write_text(edit(path.read_text()))
    with pytest.raises(CatalogError) as e:
        load_catalog(root)
    assert message in str(e.value) and "jumbo_frames.csv" in str(e.value)
