"""Which Lingjun machine types a spec allows in its region (``PlanParts.eligible``), and why each it names but
cannot use is refused (:mod:`generator.plan.rejections`): the machine types of the region that pass the spec's
filters (shared with the ECS types, :mod:`generator.plan.eligible`) and have a known HPN zone it allows.
"""

from __future__ import annotations

from generator.catalog import Catalog, InstanceType, Region
from generator.plan import rejections as r
from generator.plan.eligible import precision_ok, wanted
from generator.spec.model import Spec


def eligible_lingjun(
    spec: Spec, catalog: Catalog, region: Region
) -> tuple[list[InstanceType], dict[str, r.Rejection]]:
    """Lingjun machine types of the region that pass the spec's filters and have a known HPN zone it allows."""
    c = spec.compute
    rejected: dict[str, r.Rejection] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    out = []
    for t in catalog.lingjun_types:
        if allow and t.name not in allow:
            continue
        if region.id not in t.regions:
            if allow:
                rejected[t.name] = r.NotOffered(region.id)
            continue
        if not wanted(c, t, wanted_gpu):
            continue
        if not precision_ok(spec, catalog, t):
            rejected[t.name] = r.NoPrecision(spec.model.precision, t.gpu)
            continue
        if c.bare_metal == "avoid":
            rejected[t.name] = r.LingjunBareMetal()
            continue
        if spec.zones and not any(t.hpn_zone(z) for z in spec.zones):
            rejected[t.name] = r.NoHpnZone(tuple(t.hpn_zones))
            continue
        out.append(t.as_instance_type())
    return out, rejected
