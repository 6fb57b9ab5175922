"""Accelerators no Alibaba Cloud product offers (catalog ``unavailable_accelerators.csv``): ``gpu: Ascend-910B`` and its
aliases get a sourced answer and the nearest GPUs of the region, in ``validate`` (exit 2) and ``catalog --gpu``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import api
from generator.catalog import CatalogError, load_catalog, source_tags
from generator.catalog.unavailable import distance, nearest_gpus
from generator.cli import main
from generator.errors import SpecErrors
from generator.plan import catalog_refusals
from generator.plan.check import offered_gpus

DATA = Path(__file__).resolve().parents[1] / "generator" / "catalog" / "data" / "v1"
ALIASES = ("Ascend-910B", "910B", "910b", "Ascend910B", "ascend-910b", "Ascend 910B", "ascend_910b", " ASCEND-910B ",
           "Snt9B")


@pytest.mark.parametrize("name", ALIASES)
def test_every_alias_finds_the_row(name: str) -> None:
    cat = load_catalog()
    found = cat.unavailable_accelerator(name)
    assert found is not None and found.name == "Ascend-910B"
    assert cat.gpu(name) is None  # it is not a GPU trainstack can plan with


def test_the_row_cites_alibaba_and_huawei_pages_with_a_date() -> None:
    cat = load_catalog()
    acc = cat.unavailable_accelerator("Ascend-910B")
    urls = [cat.source(t).url for t in source_tags(acc.source)]
    assert any("alibabacloud.com" in u or "aliyun.com" in u for u in urls)
    assert any("huaweicloud.com" in u for u in urls)
    assert acc.checked == "2026-11-30"
    assert "Huawei Cloud" in acc.offered_by


def test_nearest_gpus_rank_by_memory_and_bf16() -> None:
    cat = load_catalog()
    acc = cat.unavailable_accelerator("910B")
    near = nearest_gpus(acc, offered_gpus(cat, cat.region("cn-hangzhou")))
    assert near[0].name == "A100-80G"  # 80 GB / 312 TFLOPS is closest to 64 GB / 280 TFLOPS among GA GPUs there
    ds = [distance(acc.memory_gib, acc.bf16_tflops, g.memory_gib, g.bf16_tflops) for g in near]
    assert ds == sorted(ds)
    assert distance(64, 280, 64, 280) == 0


def test_a_collision_with_gpus_csv_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "v1"
    shutil.copytree(DATA, copy)
    path = copy / "unavailable_accelerators.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("910b|", "910b|a100-80g|", 1), encoding="utf-8")
    with pytest.raises(CatalogError, match="unavailable_accelerators.csv:2: Ascend-910B is also a GPU"):
        load_catalog(copy)


def test_a_dangling_source_tag_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "v1"
    shutil.copytree(DATA, copy)
    path = copy / "unavailable_accelerators.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("|3P-910B,", "|NOPE,", 1), encoding="utf-8")
    with pytest.raises(CatalogError, match="unknown source tag 'NOPE'"):
        load_catalog(copy)


@pytest.mark.parametrize("alias", ["Ascend-910B", "ascend910b", "910B"])
def test_validate_answers_with_sources_and_exit_2(tmp_path: Path, alias: str) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: npu\nregion: cn-beijing\nmodel:\n  parameters: 7B\ncompute:\n  gpu: {alias}\n",
                    encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert f"{spec}:6:3: compute.gpu: Ascend-910B (Huawei) is offered by no Alibaba Cloud product" in result.stderr  # wording
    assert "huaweicloud.com" in result.stderr  # the source is quoted
    with pytest.raises(SpecErrors) as e:
        api.preview(spec)
    assert [(p.code, p.dotted, dict(p.fields)["gpu"]) for p in e.value.problems] == [
        (catalog_refusals.AcceleratorUnavailable.code, "compute.gpu", "Ascend-910B")]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_lingjun_ranks_lingjun_gpus(tmp_path: Path) -> None:
    cat = load_catalog()
    region = next(r for r in cat.regions if r.lingjun)
    names = {g.name for g in offered_gpus(cat, region, lingjun=True)}
    assert names and names <= {t.gpu for t in cat.lingjun_types_in_region(region.id)}


def test_catalog_gpu_answers_in_text_and_json() -> None:
    result = CliRunner().invoke(main, ["catalog", "--gpu", "ascend-910b", "--region", "cn-hangzhou"])
    assert result.exit_code == 0, result.output
    assert "not offered by Alibaba Cloud (checked 2026-11-30)" in result.output
    assert "[HW-MA-ASCEND]" in result.output and "nearest generally available GPUs in cn-hangzhou" in result.output
    result = CliRunner().invoke(main, ["catalog", "--gpu", "910B", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["unavailable"]["name"] == "Ascend-910B"
    assert {s["tag"] for s in data["sources"]} >= {"HW-MA-ASCEND", "DOC-GPU-EN"}
    assert data["nearest"] and data["nearest"][0]["distance"] <= data["nearest"][-1]["distance"]


def test_a_dlc_spec_gets_the_gpus_dlc_offers(tmp_path: Path) -> None:
    cat = load_catalog()
    region = cat.region("cn-hangzhou")
    dlc_gpus = {g.name for g in offered_gpus(cat, region, dlc=True)}
    assert dlc_gpus and dlc_gpus <= {t.gpu for t in cat.dlc_types_in_region("cn-hangzhou")}
    spec = tmp_path / "s.yaml"
    spec.write_text("name: npu\nregion: cn-hangzhou\nmodel:\n  parameters: 7B\ncompute:\n  platform: pai-dlc\n"
                    "  gpu: Ascend910B\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    hint = next(line for line in result.stderr.splitlines() if "hint: nearest GPUs" in line)
    named = [g for g in (x.name for x in cat.gpus) if f" {g} (" in hint]
    assert named and set(named) <= dlc_gpus


def test_catalog_gpu_names_the_peak_each_gpu_has_and_the_closer_gpus_left_out() -> None:
    """Review P3-17: V100s rank by the FP16 peak they have (no BF16) and say so; B-PRO-72G and H20, closer to the
    Ascend 910B than the last GPU listed, are named as left out because they are not generally available."""
    from generator.catalog.unavailable import distance, has_bf16, left_out, nearest_gpus

    cat = load_catalog()
    v100 = cat.gpu("V100-32G")
    assert not has_bf16(v100) and has_bf16(cat.gpu("A100-80G"))
    result = CliRunner().invoke(main, ["catalog", "--gpu", "Ascend-910B"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("V100-32G" in line and "125 TFLOPS FP16 (no BF16)" in line for line in lines)
    assert any("A100-80G" in line and "312 TFLOPS BF16" in line for line in lines)
    (skipped,) = [line for line in lines if "left out, though closer" in line]
    assert "B-PRO-72G (72 GB, 268 TFLOPS BF16; invite)" in skipped and "H20 (96 GB" in skipped
    acc = cat.unavailable_accelerator("Ascend-910B")
    ga = [g for g in cat.gpus if any(t.gpu == g.name and t.availability == "ga" for t in cat.instance_types)]
    shown = nearest_gpus(acc, ga, limit=5)
    far = distance(acc.memory_gib, acc.bf16_tflops, shown[-1].memory_gib, shown[-1].bf16_tflops)
    closer = left_out(acc, shown, list(cat.gpus))
    assert {"B-PRO-72G", "H20"} <= {g.name for g in closer}
    for g in closer:  # closer than the farthest GPU shown, and not one of them
        assert distance(acc.memory_gib, acc.bf16_tflops, g.memory_gib, g.bf16_tflops) < far and g not in shown
    data = json.loads(CliRunner().invoke(main, ["catalog", "--gpu", "Ascend-910B", "--json"]).output)
    assert {x["gpu"] for x in data["left_out"]} >= {"B-PRO-72G", "H20"}
    assert next(x for x in data["nearest"] if x["gpu"] == "V100-32G")["bf16"] is False


def test_a_bf16_run_is_pointed_only_at_gpus_with_bf16() -> None:
    """The nearest GPUs suggested to a bf16 spec all have bf16 (a V100 would be refused for it); an fp16 run may
    still be pointed at a V100."""
    from generator.catalog.unavailable import has_bf16, unavailable_text

    catalog = load_catalog()
    acc = catalog.unavailable_accelerator("Ascend-910B")
    region = catalog.region("cn-hangzhou")
    _, bf16_hint = unavailable_text(acc, catalog, region, bf16=True)
    _, any_hint = unavailable_text(acc, catalog, region, bf16=False)
    no_bf16 = [g.name for g in catalog.gpus if not has_bf16(g)]
    assert no_bf16 and not any(f"{name} (" in bf16_hint for name in no_bf16)
    assert any(f"{name} (" in any_hint for name in no_bf16)
