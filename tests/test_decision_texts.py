"""Decision texts say what the plan did (review P3-14): the PAI-DLC "datasets" and "ip plan" decisions name only the
datasets and vSwitches the plan has, the layout reason says whether the layers split evenly, and the Extreme NAS
reason says whether the base weights raised its capacity."""

from __future__ import annotations

from pathlib import Path

from generator import api

DLC_OSS_WEIGHTS_NO_STORAGE = """\
name: dlc-oss
region: cn-hangzhou
zones: [cn-hangzhou-k]
model:
  preset: llama-2-7b
  tokens: 1B
  weights: oss://my-weights/llama2-7b/
compute: {platform: pai-dlc, gpu: A100-80G, nodes: 1}
storage: {shared: none}
"""

PRIME_LAYERS = """\
name: prime-layers
region: cn-wulanchabu
zones: [cn-wulanchabu-c]
model:
  architecture: {layers: 61, hidden: 12288, heads: 96, kv_heads: 8}
  tokens: 10B
  global_batch_tokens: 4Mi
compute: {gpu: A100-80G, nodes: auto}
storage: {shared: none}
"""


def _plan(tmp_path: Path, text: str):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return api.plan(path)


def _reason(plan, topic: str) -> str:
    return next(d for d in plan.decisions if d.topic == topic).reason


def test_dlc_decisions_without_storage_name_nothing_that_does_not_exist(tmp_path: Path) -> None:
    plan = _plan(tmp_path, DLC_OSS_WEIGHTS_NO_STORAGE)
    datasets = _reason(plan, "datasets")
    assert "shared file system" not in datasets and "training data" not in datasets
    assert "the checkpoint prefix read-write" in datasets and "the base weights' OSS folder read-only" in datasets
    ip = _reason(plan, "ip plan")
    assert "storage" not in ip and "file system" not in ip
    assert "the egress vSwitch sits at the top of the VPC" in ip and "the NAT gateway never takes" in ip


def test_dlc_decisions_with_every_dataset_name_each_one() -> None:
    plan = api.plan(Path(__file__).resolve().parents[1] / "examples" / "finetune-dlc.yaml")
    datasets = _reason(plan, "datasets")
    for part in ("the shared file system read-write", "the OSS training data read-only",
                 "the checkpoint prefix read-write"):
        assert part in datasets
    assert "the storage and egress vSwitches sit" in _reason(plan, "ip plan")


def test_layout_reason_says_the_split_is_uneven_when_it_is(tmp_path: Path) -> None:
    reason = _reason(_plan(tmp_path, PRIME_LAYERS), "parallelism")
    assert "splits 61 layers as" in reason  # the pipeline text: an uneven split
    assert "splits the layers evenly" not in reason
    assert "splits the layers as evenly as it can" in reason


def test_layout_reason_says_evenly_when_the_layers_divide() -> None:
    plan = api.plan(Path(__file__).resolve().parents[1] / "examples" / "pretrain-70b.yaml")
    reason = _reason(plan, "parallelism")
    assert "splits the layers evenly" in reason and "as evenly as it can" not in reason


def test_nas_reason_says_the_default_capacity_was_not_raised_for_small_weights(tmp_path: Path) -> None:
    spec = Path(__file__).resolve().parents[1] / "examples" / "finetune-dlc.yaml"
    text = spec.read_text().replace("model:\n", "model:\n  weights: modelscope://modelscope/Llama-2-7b-ms@v1.0.0\n", 1)
    reason = _reason(_plan(tmp_path, text), "shared storage")
    assert "the default 1024 GiB already holds the base weights" in reason and "do not raise it" in reason
