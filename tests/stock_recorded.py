"""Recorded ECS DescribeAvailableResource answers for the stock preflight, shared by the live tests.

:class:`RecordedStock` is a :class:`generator.live.StockChecker` that answers from
tests/live_fixtures/describe_available_resource.json (bodies in the documented shape) by zone and spot strategy;
``RecordedStock.in_stock()`` answers "Available/WithStock" for every question, for tests about something else.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RECORDED_STOCK = json.loads((Path(__file__).resolve().parent / "live_fixtures/describe_available_resource.json")
                            .read_text())


def _for(body: Mapping[str, Any], zone: str, instance_type: str) -> dict[str, Any]:
    """A recorded body re-addressed to ``zone`` and ``instance_type`` (for the "anything is in stock" checker)."""
    out = copy.deepcopy(dict(body))
    for z in out["AvailableZones"]["AvailableZone"]:
        z["ZoneId"] = zone
        for r in z["AvailableResources"]["AvailableResource"]:
            for s in r["SupportedResources"]["SupportedResource"]:
                s["Value"] = instance_type
    return out


class RecordedStock:
    """Answers ``(zone, spot_strategy)`` questions with recorded bodies (a list is replayed in order, the last one
    repeating); unknown questions get ``default`` (a fixture name) or the recorded "not offered" answer."""

    def __init__(self, answers: Mapping[tuple[str, str], str | list[str]] | None = None, default: str = "",
                 missing_sdk: Exception | None = None):
        self.answers = {k: list(v) if isinstance(v, list) else [v] for k, v in (answers or {}).items()}
        self.default = default
        self.missing_sdk = missing_sdk
        self.calls: list[tuple[str, str, str, str]] = []

    @classmethod
    def in_stock(cls) -> RecordedStock:
        return cls(default="*")

    def check(self) -> None:
        if self.missing_sdk is not None:
            raise self.missing_sdk

    def describe(self, region: str, zone: str, instance_type: str, spot_strategy: str) -> Mapping[str, Any]:
        self.calls.append((region, zone, instance_type, spot_strategy))
        queue = self.answers.get((zone, spot_strategy))
        if queue:
            name = queue.pop(0) if len(queue) > 1 else queue[0]
        else:
            name = self.default or "not_offered"
        if name == "*":
            return _for(RECORDED_STOCK["gn7e_hangzhou_k_with_stock"], zone, instance_type)
        return RECORDED_STOCK[name]
