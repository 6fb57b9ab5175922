"""What a node downloads when its image lacks it is pinned (issue #20): PyTorch and every wheel it needs from
catalog/data/v1/node_wheels.csv with PyPI's sha256, installed with ``pip install --require-hashes`` from the internal
mirror over HTTPS; the driver at an exact version; the eRDMA installer over HTTPS with its sha256 checked when the
catalog records one. Catalog rows that break the rules are refused naming file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator import api
from generator.catalog import runtime
from generator.catalog.model import CatalogError
from generator.render import files as render_files

ROOT = Path(__file__).resolve().parents[1]


def test_every_wheel_torch_needs_is_pinned_with_its_pypi_sha256() -> None:
    req = runtime.hashed_requirements()
    lines = dict(line.split(" ", 1) for line in req.splitlines())
    assert "torch==2.6.0" in lines and "triton==3.2.0" in lines and "nvidia-nccl-cu12==2.21.5" in lines
    # torch 2.6.0's cp311 manylinux wheel, as PyPI lists it
    assert "--hash=sha256:7979834102cd5b7a43cc64e87f2f3b14bd0e1458f06e9f88ffa386d07c7446e1" in lines["torch==2.6.0"]
    assert all(re.fullmatch(r"(--hash=sha256:[0-9a-f]{64} ?)+", v) for v in lines.values())
    # torch's Requires-Dist on Linux x86_64, and theirs: nothing left for pip to pick unpinned
    assert {k.split("==")[0] for k in lines} >= {"filelock", "typing-extensions", "networkx", "jinja2", "markupsafe",
                                                   "fsspec", "sympy", "mpmath", "nvidia-cudnn-cu12", "nvidia-cusparselt-cu12"}


def _lingjun_spec(tmp_path: Path) -> Path:
    path = tmp_path / "lj.yaml"
    path.write_text("name: lj-rt\nregion: cn-wulanchabu\nmodel: {preset: llama-2-7b, tokens: 2B}\n"
                    "compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 2}\n")
    return path


def test_node_init_installs_them_with_require_hashes_over_https_and_pins_the_driver(tmp_path: Path) -> None:
    plan = api.plan(ROOT / "examples" / "pretrain-70b.yaml")
    script = api.render_files(plan, "examples/pretrain-70b.yaml")["node-init.sh"]
    # ECS: in the cluster facts (the user data has 16 KB); Lingjun, which has no facts: inline
    assert render_files.cluster_facts(plan)["torch_requirements"] == runtime.hashed_requirements()
    assert '["torch_requirements"])\' \\\n    /etc/trainstack/cluster.json > /etc/trainstack/torch-requirements.txt' in script
    lj = api.plan(_lingjun_spec(tmp_path))
    lj_script = api.render_files(lj, "lj.yaml")["node-init.sh"]
    body = lj_script.split("cat > /etc/trainstack/torch-requirements.txt <<'REQUIREMENTS'\n", 1)[1].split("REQUIREMENTS\n")[0]
    assert body == runtime.hashed_requirements()
    assert "--require-hashes" in script and "--only-binary=:all: -r /etc/trainstack/torch-requirements.txt" in script
    assert 'PYPI_INDEX="https://mirrors.cloud.aliyuncs.com/pypi/simple/"' in script
    # HTTPS first, then the mirror's http:// index, still with every wheel's sha256 required
    https, http = [c for c in script.split("/opt/trainstack/venv/bin/pip install")[1:] if "torch-requirements" in c][:2]
    assert '--index-url "${PYPI_INDEX}"' in https and "--trusted-host" not in https
    assert '--index-url "http://${PYPI_INDEX#https://}" --trusted-host' in http and "--require-hashes" in http
    assert f'DRIVER_VERSION="{render_files.NODE_RUNTIME["driver_version"]}"' in script
    assert '"nvidia-driver-${DRIVER_VERSION}"' in script and "latest-dkms\"" not in script
    assert 'ERDMA_INSTALLER_URL="https://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz"' in script
    # the eRDMA installer only with the sha256 Alibaba publishes (catalog node_downloads.csv)
    published = runtime.downloads()["erdma-installer"].sha256
    assert re.fullmatch(r"[0-9a-f]{64}", published) and f'ERDMA_INSTALLER_SHA256="{published}"' in script
    # nothing else over plain HTTP but the metadata service and, when HTTPS fails, the eRDMA page's own http:// URL
    # (checked by that sha256)
    assert set(re.findall(r"http://[^/\"' ]+", script)) == {"http://100.100.100.200", "http://${ERDMA_INSTALLER_URL#https:",
                                                             "http://${PYPI_INDEX#https:"}
    assert "ERDMA_INSTALLER" not in lj_script  # Lingjun installs no eRDMA stack


@pytest.mark.parametrize(("row", "what"), [
    ("torch,2.6.0,torch-2.6.0-cp311-cp311-manylinux1_x86_64.whl,ABC,2025-01-29,2026-12-02,PYPI-SIMPLE", "sha256"),
    ("torch,2.6.0,torch-2.7.0-cp311-cp311-manylinux1_x86_64.whl," + "a" * 64 + ",x,y,PYPI-SIMPLE", "version"),
    ("torch,2.6.0,triton-2.6.0-cp311-cp311-manylinux1_x86_64.whl," + "a" * 64 + ",x,y,PYPI-SIMPLE", "package"),
])
def test_a_bad_wheel_row_is_refused_naming_the_line(tmp_path: Path, row: str, what: str) -> None:
    path = tmp_path / "node_wheels.csv"
    path.write_text(",".join(runtime.WHEEL_COLUMNS) + "\n" + row + "\n")
    with pytest.raises(CatalogError, match=rf"{path}:2: "):
        runtime.wheels.__wrapped__(path)


def test_a_download_over_plain_http_or_with_a_bad_sha256_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "node_downloads.csv"
    for url, sha in (("http://mirrors.cloud.aliyuncs.com/x.tar.gz", ""), ("https://m/x.tar.gz", "abc")):
        path.write_text(",".join(runtime.DOWNLOAD_COLUMNS) + f"\nk,{url},1,{sha},2026-12-02,DOC-ERDMA-USAGE,n\n")
        with pytest.raises(CatalogError, match=rf"{path}:2: "):
            runtime.downloads.__wrapped__(path)


def test_a_generated_stack_pins_the_pulumi_sdks_the_project_pins() -> None:
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {d for d in deps if d.startswith(("pulumi==", "pulumi-alicloud=="))}
    plan = api.plan(ROOT / "examples" / "pretrain-70b.yaml")
    rendered = api.render_files(plan, "examples/pretrain-70b.yaml")["requirements.txt"]
    assert set(rendered.splitlines()) == pins == {"pulumi==3.260.0", "pulumi-alicloud==4.0.0"}


@pytest.mark.parametrize("https_answers", [True, False])
def test_the_pytorch_install_takes_the_http_index_only_when_https_fails_and_still_requires_the_hashes(
        tmp_path: Path, https_answers: bool) -> None:
    """The install loop of node-init.sh, run with a stand-in pip: a mirror that answers HTTPS is asked only over HTTPS;
    one that does not is asked at its http:// index with --trusted-host, each call still with --require-hashes."""
    import subprocess

    plan = api.plan(ROOT / "examples" / "pretrain-70b.yaml")
    script = api.render_files(plan, "examples/pretrain-70b.yaml")["node-init.sh"]
    start = script.index('  host="${PYPI_INDEX#https://}"')
    loop = script[start:script.index("  done\n", start) + len("  done\n")]
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    calls = tmp_path / "calls"
    (venv / "pip").write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {calls}\n'
        f'case "$*" in *"https://"*) exit {0 if https_answers else 1} ;; *) exit 0 ;; esac\n')
    (venv / "pip").chmod(0o755)
    program = ('PYPI_INDEX="https://mirrors.cloud.aliyuncs.com/pypi/simple/"\nTORCH_SPEC=torch\n'
               'fail() { echo "FAILED: $*"; exit 1; }\nsleep() { :; }\n'
               + loop.replace("/opt/trainstack/venv/bin/pip", str(venv / "pip")))
    result = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    asked = calls.read_text().splitlines()
    assert all("--require-hashes" in a and "--only-binary=:all:" in a for a in asked)
    if https_answers:
        assert len(asked) == 1 and "--index-url https://mirrors.cloud.aliyuncs.com/pypi/simple/" in asked[0]
    else:
        assert len(asked) == 2 and "--trusted-host" not in asked[0]
        assert "--index-url http://mirrors.cloud.aliyuncs.com/pypi/simple/ --trusted-host mirrors.cloud.aliyuncs.com" \
            in asked[1]
