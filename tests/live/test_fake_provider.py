"""The fake provider decides update or replace from the replacement data the offline diff uses (no CLI needed)."""

from __future__ import annotations

from typing import Any

import fake_alicloud
import pytest
from pulumi.runtime.proto import provider_pb2

URN = "urn:pulumi:dev::live-4::alicloud:ecs/instance:Instance::live-4-node-000"
OLD = {
    "instanceType": "ecs.gn7e-c16g1.32xlarge",
    "availabilityZone": "cn-hangzhou-k",
    "privateIp": "10.0.0.10",
}


class Context:
    def abort(self, code: Any, message: str) -> None:
        raise AssertionError(f"aborted: {message}")


def diff(**news: Any) -> Any:
    request = provider_pb2.DiffRequest(
        id="i-1", urn=URN, olds=fake_alicloud._struct(OLD), news=fake_alicloud._struct({**OLD, **news})
    )
    request.old_inputs.CopyFrom(fake_alicloud._struct(OLD))
    return fake_alicloud.FakeAlicloud().Diff(request, Context())


@pytest.mark.parametrize(
    ("change", "replaces"),
    [
        ({"availabilityZone": "cn-hangzhou-j"}, ["availabilityZone"]),  # ForceNew in the provider
        ({"instanceType": "ecs.gn7i-c32g1.32xlarge"}, []),  # updated in place (with a stop and start)
        ({}, []),
    ],
)
def test_update_or_replace_follows_the_replacement_data(change: dict[str, str], replaces: list[str]) -> None:
    answer = diff(**change)
    assert list(answer.replaces) == replaces
    assert list(answer.diffs) == sorted(change)
    none, some = provider_pb2.DiffResponse.DIFF_NONE, provider_pb2.DiffResponse.DIFF_SOME
    assert answer.changes == (some if change else none)
    assert fake_alicloud.RULES[("alicloud:ecs/instance:Instance", "availabilityZone")] == "replace"
