"""The fake OpenAPI endpoint answers Alibaba's own SDK clients (the ECS and NAS SDKs trainstack installs), reached
through TRAINSTACK_ALIBABA_ENDPOINT as trainstack's clients are: the Cloud Assistant calls of a node job, the stock
question and the CPFS export lookup. No Pulumi CLI needed."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openapi import FakeOpenApi

from generator.live.mountaddr import sdk_config

INSTANCE = "alicloud:ecs/instance:Instance"


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenApi]:
    cloud = {
        "resources": {
            f"{INSTANCE}::i-aaa": {
                "id": "i-aaa",
                "type": INSTANCE,
                "name": "c-node-000",
                "inputs": {},
                "outputs": {},
            },
            f"{INSTANCE}::i-bbb": {
                "id": "i-bbb",
                "type": INSTANCE,
                "name": "c-node-001",
                "inputs": {},
                "outputs": {},
            },
        }
    }
    (tmp_path / "cloud.json").write_text(json.dumps(cloud))
    server = FakeOpenApi(tmp_path / "cloud.json", tmp_path / "control.json").start()
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFakeKeyForTests")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "fake-secret")
    yield server
    server.stop()


def ecs(api: FakeOpenApi):
    from alibabacloud_ecs20140526.client import Client

    return Client(sdk_config({"TRAINSTACK_ALIBABA_ENDPOINT": api.url}, "cn-hangzhou"))


def test_cloud_assistant_run_describe_and_stop(api: FakeOpenApi, tmp_path: Path) -> None:
    from alibabacloud_ecs20140526 import models as m

    (tmp_path / "control.json").write_text(
        json.dumps({"commands": {"i-bbb": {"exit_code": 3, "output": "nvidia-smi: no devices\n"}}})
    )
    client = ecs(api)
    run = client.run_command(
        m.RunCommandRequest(
            region_id="cn-hangzhou",
            type="RunShellScript",
            command_content="nvidia-smi -L",
            name="trainstack-check",
            instance_id=["i-aaa", "i-bbb"],
            timeout=60,
        )
    ).body
    assert run.invoke_id.startswith("t-") and run.command_id.startswith("c-")
    call = api.calls[-1]
    assert call["action"] == "RunCommand" and call["params"]["InstanceId.1"] == "i-aaa"
    invocations = client.describe_invocations(
        m.DescribeInvocationsRequest(region_id="cn-hangzhou", invoke_id=run.invoke_id)
    ).body.invocations.invocation
    assert invocations[0].invocation_status == "Failed"
    results = client.describe_invocation_results(
        m.DescribeInvocationResultsRequest(region_id="cn-hangzhou", invoke_id=run.invoke_id)
    ).body.invocation.invocation_results.invocation_result
    by_id = {r.instance_id: r for r in results}
    assert by_id["i-aaa"].exit_code == 0 and by_id["i-aaa"].invocation_status == "Success"
    assert by_id["i-bbb"].exit_code == 3
    assert base64.b64decode(by_id["i-bbb"].output).decode() == "nvidia-smi: no devices\n"
    again = client.invoke_command(
        m.InvokeCommandRequest(region_id="cn-hangzhou", command_id=run.command_id, instance_id=["i-aaa"])
    ).body
    assert again.invoke_id != run.invoke_id
    client.stop_invocation(
        m.StopInvocationRequest(region_id="cn-hangzhou", invoke_id=again.invoke_id, instance_id=["i-aaa"])
    )
    assert api.actions()[-1] == "StopInvocation"


def test_a_released_instance_is_not_found(api: FakeOpenApi) -> None:
    from alibabacloud_ecs20140526 import models as m

    with pytest.raises(Exception, match="InvalidInstance.NotFound"):
        ecs(api).run_command(
            m.RunCommandRequest(
                region_id="cn-hangzhou", type="RunShellScript", command_content="true", instance_id=["i-gone"]
            )
        )


def test_stock_and_sold_out(api: FakeOpenApi, tmp_path: Path) -> None:
    from alibabacloud_ecs20140526 import models as m

    def ask(zone: str) -> str:
        body = (
            ecs(api)
            .describe_available_resource(
                m.DescribeAvailableResourceRequest(
                    region_id="cn-hangzhou",
                    zone_id=zone,
                    destination_resource="InstanceType",
                    instance_type="ecs.gn7e-c16g1.32xlarge",
                )
            )
            .body.to_map()
        )
        return body["AvailableZones"]["AvailableZone"][0]["StatusCategory"]

    assert ask("cn-hangzhou-k") == "WithStock"
    (tmp_path / "control.json").write_text(json.dumps({"sold_out": ["cn-hangzhou-k"]}))
    assert ask("cn-hangzhou-k") == "WithoutStock"
