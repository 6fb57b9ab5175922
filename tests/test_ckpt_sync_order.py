"""trainstack-ckpt-sync copies a checkpoint folder to OSS in the order the job wrote it: the commit marker a writer
writes last (torch.distributed.checkpoint's .metadata, Megatron's latest_checkpointed_iteration.txt, a meta.json)
never reaches the bucket before the shards it vouches for, also when an upload fails mid-pass or a file is still
settling. The script is run as generated (render/files.ckpt_sync_script), with a recording bucket."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from generator.render.files import ckpt_sync_script


def _sync(state: Path, settle: int = 60) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "trainstack_ckpt_sync"}
    exec(compile(ckpt_sync_script(), "trainstack-ckpt-sync", "exec"), ns)  # noqa: S102 - the generated script
    ns["STATE"], ns["SETTLE"] = str(state), settle
    return ns


class Bucket:
    """Records each upload's key; fails the upload of ``fail`` once."""

    def __init__(self, ns: dict[str, Any], fail: str = "") -> None:
        self.keys: list[str] = []
        self.ns, self.fail = ns, fail

    def upload(self, path: str, key: str) -> None:
        if key == self.fail:
            self.fail = ""
            raise self.ns["SyncError"](f"PUT {key}: HTTP 503")
        self.keys.append(key)


def _write(root: Path, rel: str, mtime: float) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rel.encode())
    os.utime(path, (mtime, mtime))


def test_a_checkpoint_reaches_the_bucket_shards_first_and_its_marker_last(tmp_path: Path) -> None:
    src, ns = tmp_path / "ckpt", _sync(tmp_path)
    old = 1_000_000.0
    # a DCP save: shards, then .metadata; a later step; Megatron's tracker file rewritten after each step
    for rel, t in [
        ("iter_0000100/__0_0.distcp", old),
        ("iter_0000100/__1_0.distcp", old + 1),
        ("iter_0000100/.metadata", old + 2),
        ("latest_checkpointed_iteration.txt", old + 3),
        ("iter_0000200/__0_0.distcp", old + 10),
        ("iter_0000200/.metadata", old + 11),
    ]:
        _write(src, rel, t)
    bucket = Bucket(ns)
    assert ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/") == 6
    assert bucket.keys == [
        "c/iter_0000100/__0_0.distcp",
        "c/iter_0000100/__1_0.distcp",
        "c/iter_0000100/.metadata",
        "c/latest_checkpointed_iteration.txt",
        "c/iter_0000200/__0_0.distcp",
        "c/iter_0000200/.metadata",
    ]  # not the alphabetical order, which puts .metadata and iter_0000200 before iter_0000100's shards


def test_at_one_mtime_the_markers_go_after_the_data(tmp_path: Path) -> None:
    """A copy that kept mtimes (tar, cp -p) or a coarse clock gives every file one mtime."""
    src, ns = tmp_path / "ckpt", _sync(tmp_path)
    for rel in ("step-1/meta.json", "step-1/state.pt", "step-1/.metadata", "step-1/model.safetensors", "latest"):
        _write(src, rel, 1_000_000.0)
    bucket = Bucket(ns)
    ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/")
    assert bucket.keys == ["c/step-1/model.safetensors", "c/step-1/state.pt", "c/latest", "c/step-1/.metadata",
                           "c/step-1/meta.json"]  # fmt: skip


def test_a_failed_upload_ends_the_pass_and_the_next_goes_on_in_order(tmp_path: Path) -> None:
    src, ns = tmp_path / "ckpt", _sync(tmp_path)
    for i, rel in enumerate(("step-1/state.pt", "step-1/meta.json", "step-2/state.pt", "step-2/meta.json")):
        _write(src, rel, 1_000_000.0 + i)
    bucket = Bucket(ns, fail="c/step-2/state.pt")
    try:
        ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/")
        raise AssertionError("the failed upload did not end the pass")
    except ns["SyncError"]:
        pass
    assert bucket.keys == ["c/step-1/state.pt", "c/step-1/meta.json"]  # step-2's marker not before its state
    assert ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/") == 2  # the state file says what is copied
    assert bucket.keys[2:] == ["c/step-2/state.pt", "c/step-2/meta.json"]


@settings(max_examples=60, deadline=None)
@given(
    ages=st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=12, unique=True),
    fail_at=st.integers(min_value=-1, max_value=11),
)
def test_the_bucket_always_holds_a_prefix_of_the_write_order(
    tmp_path_factory: Any, ages: list[int], fail_at: int
) -> None:
    """Files written one after another, a pass at any moment with any one upload failing: what reached the bucket
    is the first files in the order they were written, every file older than the settle time up to the failed one."""
    tmp = tmp_path_factory.mktemp("sync")
    src, ns = tmp / "ckpt", _sync(tmp)
    now = ns["time"].time()
    ages = sorted(ages, reverse=True)  # the first written is the oldest, and the last by name
    written = [f"f{99 - i:02d}/{'meta.json' if i % 2 else 'shard.bin'}" for i in range(len(ages))]
    for rel, age in zip(written, ages, strict=True):
        _write(src, rel, now - age)
    fail = f"c/{written[fail_at]}" if 0 <= fail_at < len(written) else ""
    bucket = Bucket(ns, fail=fail)
    settled = sum(1 for age in ages if age >= 60)
    try:
        ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/")
        assert not fail or fail_at >= settled  # the failing file was never tried: it is still settling
    except ns["SyncError"]:
        assert 0 <= fail_at < settled
    assert bucket.keys == [f"c/{rel}" for rel in written[: min(settled, fail_at if fail else settled)]]


def test_a_save_written_aside_is_copied_once_under_its_final_name(tmp_path: Path) -> None:
    src, ns = tmp_path / "ckpt", _sync(tmp_path)
    old = 1_000_000.0
    for rel in ("step-2.node-0.tmp/state.pt", "tmp-checkpoint-2/model.safetensors", "step-1/.metadata.tmp"):
        _write(src, rel, old)
    _write(src, "step-1/__0_0.distcp", old)
    bucket = Bucket(ns)
    assert ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/") == 1
    assert bucket.keys == ["c/step-1/__0_0.distcp"]  # nothing in flight
    os.replace(src / "step-1/.metadata.tmp", src / "step-1/.metadata")
    os.replace(src / "step-2.node-0.tmp", src / "step-2")
    ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/")
    assert bucket.keys[1:] == ["c/step-2/state.pt", "c/step-1/.metadata"]  # one mtime: the marker last


def test_a_file_removed_during_the_pass_ends_it_without_a_failure(tmp_path: Path) -> None:
    """The job deletes its oldest checkpoint while the pass runs: the pass stops where it is (no marker of a
    checkpoint being deleted goes up after the shard that vanished) and the next pass copies what is left."""
    src, ns = tmp_path / "ckpt", _sync(tmp_path)
    for i, rel in enumerate(("step-1/state.pt", "step-1/meta.json", "step-2/state.pt", "step-2/meta.json")):
        _write(src, rel, 1_000_000.0 + i)

    class Rotating(Bucket):
        def upload(self, path: str, key: str) -> None:
            if key == "c/step-1/state.pt":
                for name in ("state.pt", "meta.json"):
                    (src / "step-1" / name).unlink()
                (src / "step-1").rmdir()
                raise FileNotFoundError(2, "No such file or directory", path)
            super().upload(path, key)

    bucket = Rotating(ns)
    assert ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/") == 0
    assert bucket.keys == []
    assert ns["sync_pass"](str(src), "oss://b/c/", bucket, "c/") == 2
    assert bucket.keys == ["c/step-2/state.pt", "c/step-2/meta.json"]


def test_a_missing_file_that_is_still_there_is_a_failure(tmp_path: Path) -> None:
    """FileNotFoundError from something else than the checkpoint (say the CA bundle) is not taken for a rotation."""
    src, ns = tmp_path / "ckpt", _sync(tmp_path)
    _write(src, "step-1/state.pt", 1_000_000.0)

    class Broken(Bucket):
        def upload(self, path: str, key: str) -> None:
            raise FileNotFoundError(2, "No such file or directory", "/etc/ssl/certs/ca-certificates.crt")

    try:
        ns["sync_pass"](str(src), "oss://b/c/", Broken(ns), "c/")
        raise AssertionError("the failure was swallowed")
    except FileNotFoundError as e:
        assert e.filename == "/etc/ssl/certs/ca-certificates.crt"
