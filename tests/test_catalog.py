"""Tests for the instance-type catalog (generator/catalog)."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator.catalog import (
    CATALOG_VERSION,
    Catalog,
    CatalogError,
    InstanceType,
    load_catalog,
    source_tags,
)

DATA = Path(__file__).resolve().parents[1] / "generator" / "catalog" / "data" / CATALOG_VERSION

# The only list prices, [3P-PRICE]: ArthurChiao, "GPU Prices Quick Reference" (2023-06-17), section "AlibabaCloud
# (as of 2023.06)", https://github.com/ArthurChiao/arthurchiao.github.io _posts/2023-06-17-gpu-prices.md:
# pay-as-you-go CNY/h, cn-shanghai, 2023-06.
REFERENCE_PRICES = {
    "ecs.gn7e-c16g1.4xlarge": 34.74,
    "ecs.gn7e-c16g1.16xlarge": 138.96,
    "ecs.gn7e-c16g1.32xlarge": 277.93,
    "ecs.ebmgn7e.32xlarge": 277.93,
    "ecs.gn7-c13g1.26xlarge": 252.66,
    "ecs.gn6v-c8g1.16xlarge": 211.68,
    "ecs.gn6e-c12g1.24xlarge": 157.91,
    "ecs.gn7i-c8g1.2xlarge": 9.53,
    "ecs.gn7i-c32g1.32xlarge": 53.23,
}


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _rows(name: str) -> list[dict[str, str]]:
    with (DATA / f"{name}.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --- parsing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["instance_types", "gpus", "regions", "storage_prices", "sources"])
def test_every_row_parses(cat: Catalog, name: str) -> None:
    loaded = {
        "instance_types": cat.instance_types,
        "gpus": cat.gpus,
        "regions": cat.regions,
        "storage_prices": cat.storage_prices,
        "sources": cat.sources,
    }[name]
    assert len(loaded) == len(_rows(name)) > 0


def test_version_and_date(cat: Catalog) -> None:
    assert (cat.version, cat.date) == ("v1", "2026-11-29")


def test_all_reference_instance_types_present(cat: Catalog) -> None:
    assert len(cat.instance_types) == 60
    assert not [t for t in cat.instance_types if "tee" in t.name]
    for name in ("ecs.gn7i-c48g1.12xlarge", "ecs.gn7i-c56g1.14xlarge", "ecs.gn7i-8x.16xlarge",
                 "ecs.gn9gc.8xlarge", "ecs.ebmgn9ge.64xlarge", "ecs.ebmgn9gc.64xlarge",
                 "ecs.gn6v-c10g1.20xlarge"):
        assert cat.instance(name) is not None, name


def test_rows_are_sorted(cat: Catalog) -> None:
    names = [t.name for t in cat.instance_types]
    assert names == sorted(names)
    assert list(cat.gpu_names()) == sorted(cat.gpu_names())
    assert list(cat.region_ids()) == sorted(cat.region_ids())


# --- referential integrity ------------------------------------------------------------------------------


def test_every_instance_gpu_exists(cat: Catalog) -> None:
    for t in cat.instance_types:
        assert cat.gpu(t.gpu) is not None, t.name
        assert cat.gpu(t.gpu).memory_gib == t.gpu_memory_gib, t.name


def test_every_source_tag_exists(cat: Catalog) -> None:
    fields = [t.source for t in cat.instance_types] + [t.price.source for t in cat.instance_types]
    fields += [g.source for g in cat.gpus] + [r.source for r in cat.regions]
    fields += [s.source for s in cat.storage_prices]
    for field in fields:
        tags = source_tags(field)
        assert tags, field
        for tag in tags:
            assert cat.source(tag) is not None, f"{tag!r} cited by {field!r}"


def test_every_region_family_exists(cat: Catalog) -> None:
    families = {t.family for t in cat.instance_types}
    for r in cat.regions:
        assert set(r.gpu_families) <= families, r.id
        assert r.zones and all(z.startswith(r.id) for z in r.zones), r.id


def test_required_regions(cat: Catalog) -> None:
    for rid in ("cn-beijing", "cn-shanghai", "cn-hangzhou", "cn-shenzhen", "cn-zhangjiakou", "cn-wulanchabu",
                "cn-hongkong", "ap-southeast-1", "us-west-1", "eu-central-1"):
        assert cat.region(rid) is not None, rid
    assert cat.region("cn-wulanchabu").zones == ("cn-wulanchabu-a", "cn-wulanchabu-b", "cn-wulanchabu-c")


def test_region_facts_from_reference(cat: Catalog) -> None:
    # OSS per-account limits [DOC-OSS-LIM] and CPFS LRS regions [DOC-CPFS-ZRS]
    def oss(rid: str) -> tuple[float, float]:
        r = cat.region(rid)
        return r.oss_upload_gbps, r.oss_download_gbps

    assert oss("cn-beijing") == (20, 100)
    assert oss("cn-zhangjiakou") == (20, 20)
    assert cat.region("cn-wulanchabu").oss_download_gbps == 10
    assert cat.region("ap-southeast-1").cpfs and not cat.region("cn-hongkong").cpfs
    assert not any(r.verified for r in cat.regions if "TS-REGION" in source_tags(r.source))


def test_types_in_region(cat: Catalog) -> None:
    shanghai = cat.types_in_region("cn-shanghai")
    assert cat.instance("ecs.gn7e-c16g1.32xlarge") in shanghai
    assert {t.family for t in shanghai} == set(cat.region("cn-shanghai").gpu_families)
    assert cat.types_in_region("mars-north-1") == ()


# --- prices --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,price", sorted(REFERENCE_PRICES.items()))
def test_listed_prices_match_reference(cat: Catalog, name: str, price: float) -> None:
    t = cat.instance(name)
    assert t.price.cny_per_hour == price
    assert not t.price.estimated
    assert (t.price.date, t.price.region, t.price.source) == ("2023-06", "cn-shanghai", "3P-PRICE")


def test_only_reference_prices_are_unestimated(cat: Catalog) -> None:
    listed = {t.name for t in cat.instance_types if not t.price.estimated}
    assert listed == set(REFERENCE_PRICES)
    for t in cat.instance_types:
        if t.price.estimated:
            assert t.price.source.startswith("estimate:"), t.name
            assert t.price.date == "2026-11-29", t.name
        assert t.price.cny_per_hour > 0, t.name


def test_estimates_are_consistent(cat: Catalog) -> None:
    # bare metal is priced like its ECS sibling; the gn7i fit reproduces both listed gn7i prices
    def price(name: str) -> float:
        return cat.instance(name).price.cny_per_hour

    assert price("ecs.ebmgn7ex.32xlarge") == 277.93
    assert price("ecs.ebmgn8v.48xlarge") == price("ecs.gn8v-8x.48xlarge")
    assert price("ecs.gn7i-c8g1.2xlarge") < price("ecs.gn7i-c56g1.14xlarge") < 53.23


def test_storage_prices(cat: Catalog) -> None:
    for item in ("cpfs_advance_100", "cpfs_advance_200", "nas_extreme_standard", "nas_extreme_advance",
                 "oss_standard", "oss_ia"):
        p = cat.storage_price(item)
        assert p is not None and p.price_cny > 0, item
        assert p.estimated == p.source.startswith("estimate:"), item
    assert cat.storage_price("cpfs_advance_200").price_cny == 1.4
    # '-' and '_' are interchangeable in item keys (the planner asks for "cpfs-advance_200", "oss-standard")
    assert cat.storage_price("cpfs-advance_200") is cat.storage_price("cpfs_advance_200")
    assert cat.storage_price("nas-extreme-standard") is cat.storage_price("nas_extreme_standard")
    assert cat.storage_price("oss-standard").unit == "CNY/GB-month"
    assert cat.storage_price("nope") is None


# --- network / placement facts -------------------------------------------------------------------------


def test_ebmgn7ex_needs_two_eris_on_two_cards(cat: Catalog) -> None:
    t = cat.instance("ecs.ebmgn7ex.32xlarge")
    assert t.eri_count == 2 and t.two_network_cards and t.erdma_gbps == 160
    assert t.rdma and t.bare_metal and t.low_latency_set and t.uefi_required


def test_dual_nic_bare_metal_types(cat: Catalog) -> None:
    dual = {t.family for t in cat.instance_types if t.two_network_cards}
    assert dual == {"ebmgn7ex", "ebmgn7ix", "ebmgn8is", "ebmgn8ia", "ebmgn8v",
                    "ebmgn9g", "ebmgn9ge", "ebmgn9gc"}
    assert all(t.eri_count == 2 and t.bare_metal for t in cat.instance_types if t.two_network_cards)


def test_eri_counts(cat: Catalog) -> None:
    for t in cat.instance_types:
        if t.family in ("gn8v", "gn8is", "gn9gc"):
            assert t.eri_count == 1 and not t.bare_metal, t.name
        if t.family in ("gn7e", "ebmgn7e", "gn7", "ebmgn7", "gn7i", "ebmgn7i", "gn6v", "gn6e", "ebmgn6v",
                        "ebmgn6e", "sccgn7ex"):
            assert t.eri_count == 0, t.name


def test_sccgn7ex_is_scc_with_roce(cat: Catalog) -> None:
    t = cat.instance("ecs.sccgn7ex.32xlarge")
    assert t.scc and t.roce_gbps == 800 and t.rdma and t.eri_count == 0
    assert [x.name for x in cat.instance_types if x.scc] == ["ecs.sccgn7ex.32xlarge"]
    assert all(x.roce_gbps is None for x in cat.instance_types if not x.scc)


def test_gn7e_has_no_eri(cat: Catalog) -> None:
    for t in cat.instance_types:
        if t.family == "gn7e":
            assert t.eri_count == 0 and t.erdma_gbps is None and not t.rdma, t.name


def test_low_latency_and_availability(cat: Catalog) -> None:
    assert {t.family for t in cat.instance_types if t.low_latency_set} == {"ebmgn8v", "ebmgn7ex", "gn8v"}
    by_family = {t.family: t.availability for t in cat.instance_types}
    for f in ("gn8v", "gn8is", "ebmgn8v", "ebmgn8is", "ebmgn8ia"):
        assert by_family[f] == "contact-sales", f
    for f in ("gn9gc", "ebmgn9g", "ebmgn9ge", "ebmgn9gc"):
        assert by_family[f] == "invite", f
    assert by_family["gn7e"] == "ga"


def test_derived_properties(cat: Catalog) -> None:
    t = cat.instance("ecs.gn7e-c16g1.32xlarge")
    assert isinstance(t, InstanceType)
    assert t.total_gpu_memory_gib == 640
    assert t.host_to_gpu_memory_ratio == pytest.approx(1000 / 640)


# --- GPU lookup ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("query,expected", [
    ("A100-80G", "A100-80G"), ("a100", "A100-80G"), ("A100_80G", "A100-80G"), ("  A100-80GB ", "A100-80G"),
    ("a100-40g", "A100-40G"), ("H20", "H20"), ("h20", "H20"), ("L20", "L20"), ("a10", "A10"),
    ("V100", "V100-16G"), ("v100-32G", "V100-32G"), ("rtx-pro-5000-72g", "B-PRO-72G"), ("b-48g", "B-48G"),
])
def test_gpu_alias_lookup_is_case_insensitive(cat: Catalog, query: str, expected: str) -> None:
    assert cat.gpu(query).name == expected


def test_unknown_lookups_return_none(cat: Catalog) -> None:
    assert cat.gpu("h100") is None
    assert cat.instance("ecs.nope") is None
    assert cat.region("nope") is None
    assert cat.source("NOPE") is None


def test_gpu_figures(cat: Catalog) -> None:
    assert cat.gpu("A100-80G").bf16_tflops == 312
    assert cat.gpu("H20").bf16_tflops == 148
    assert cat.gpu("A10").bf16_tflops == 125
    assert cat.gpu("V100-16G").bf16_tflops == 125 and "no bf16" in cat.gpu("V100-16G").notes.lower()
    for g in cat.gpus:
        assert 0 < g.mfu < 1 and g.interconnect in ("nvlink", "pcie"), g.name
        if g.interconnect == "pcie":
            assert g.mfu <= 0.30, g.name
    for name in ("B-PRO-72G", "B-48G"):
        assert "UNVERIFIED" in cat.gpu(name).notes


# --- determinism, caching, purity ----------------------------------------------------------------------


def test_load_catalog_is_deterministic(tmp_path: Path) -> None:
    a = load_catalog()
    assert load_catalog() is a  # cached for the default directory
    b = load_catalog(DATA)
    assert b == a and b is not a
    # row order in the files does not matter
    copy = tmp_path / "v1"
    shutil.copytree(DATA, copy)
    path = copy / "instance_types.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([header, *reversed(rows)]) + "\n", encoding="utf-8")
    assert load_catalog(copy) == a


def test_catalog_does_not_import_pulumi() -> None:
    code = "import sys, generator.catalog as c; c.load_catalog(); print('pulumi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"


def test_catalog_imports_the_standard_library_only() -> None:
    code = ("import sys; before = set(sys.modules); import generator.catalog as c; c.load_catalog(); "
            "print(sorted({m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "['generator']"


# --- errors --------------------------------------------------------------------------------------------


def _broken_copy(tmp_path: Path, file: str, old: str, new: str) -> Path:
    copy = tmp_path / "v1"
    shutil.copytree(DATA, copy)
    path = copy / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return copy


@pytest.mark.parametrize("file,old,new,message", [
    ("instance_types.csv", "ecs.gn7e-c16g1.32xlarge,gn7e,A100-80G,8,",
     "ecs.gn7e-c16g1.32xlarge,gn7e,A100-80G,eight,", "column 'gpus'"),
    ("instance_types.csv", "ecs.gn7e-c16g1.32xlarge,gn7e,A100-80G", "ecs.gn7e-c16g1.32xlarge,gn7e,H100",
     "not in gpus.csv"),
    ("instance_types.csv", ",false,ga,277.93,false,2023-06", ",maybe,ga,277.93,false,2023-06",
     "expected true or false"),
    ("gpus.csv", "DOC-GPU-EN|NV-A10|TS-EST", "DOC-GPU-EN|NV-A10|NOPE", "unknown source tag 'NOPE'"),
    ("regions.csv", "gn6v|gn6e|gn7i,false", "gn6v|gn6e|gn99,false", "families not in instance_types.csv"),
    ("storage_prices.csv", "cpfs_advance_200,CNY/GiB-month,1.4,", "cpfs_advance_200,CNY/GiB-month,",
     "expected 7 fields"),
])
def test_malformed_rows_raise_with_file_and_line(
    tmp_path: Path, file: str, old: str, new: str, message: str
) -> None:
    copy = _broken_copy(tmp_path, file, old, new)
    with pytest.raises(CatalogError, match=message) as err:
        load_catalog(copy)
    assert isinstance(err.value, ValueError)
    assert f"{file}:" in str(err.value)
    line = str(err.value).split(f"{file}:", 1)[1].split(":", 1)[0]
    assert line.isdigit() and int(line) > 1


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="file not found"):
        load_catalog(tmp_path)
