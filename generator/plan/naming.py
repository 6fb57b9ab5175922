"""Node names: the one rule for the plan (ECS ranks and Lingjun nodes), node-init.sh's hostfile and whatever reads
a rank back from a name (heal, node-init.sh on Lingjun).

Rank ``i`` of cluster ``NAME`` is ``NAME-node-<i>``, the rank zero-padded to at least :data:`NODE_RANK_DIGITS`
digits. The width never depends on the cluster's size, so a name is stable at any size: growing 512 -> 1,024 nodes
(or 999 -> 1,000) renames no existing node, and Pulumi replaces none (an instance's name is part of its URN).
Ranks 0-999 are ``NAME-node-000`` ... ``NAME-node-999``; rank 1,000 is ``NAME-node-1000``. (Until trainstack 0.2 a
cluster of 1,000 nodes or more used four digits for every rank, so crossing 1,000 renamed them all.)
"""

from __future__ import annotations

import re

NODE_RANK_DIGITS = 3  # the minimum width; printf's %03d pads the same way (templates/stack/node-init.sh.j2)


def node_name(cluster: str, rank: int) -> str:
    """The name (and hostname, and Pulumi resource name) of rank ``rank`` of cluster ``cluster``."""
    if rank < 0:
        raise ValueError(f"a rank is never negative: {rank}")
    return f"{cluster}-node-{rank:0{NODE_RANK_DIGITS}d}"


def node_rank(cluster: str, name: str) -> int | None:
    """The rank :func:`node_name` gave ``name``, or None if ``name`` is not a node name of ``cluster``."""
    match = re.fullmatch(re.escape(cluster) + r"-node-(\d+)", name)
    if match is None:
        return None
    rank = int(match.group(1))
    return rank if node_name(cluster, rank) == name else None
