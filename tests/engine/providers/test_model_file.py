"""The model file Ollama names is opened only when it is a regular GGUF file.

The path comes from the engine (`/api/show`'s `FROM` line), so it can name anything: a FIFO
(before, Brim blocked in open() for good and ignored SIGTERM), a device, a kernel file, a
symlink loop, a sparse file of 10 GB, a header that promises gigabytes. Each is refused at
once with the reason, and a real GGUF still opens.
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from engine.providers.model_file import (
    MAX_LINK_HOPS,
    ModelFileRefused,
    open_model_file,
    open_vocabulary,
)


def _refused(path: str | Path) -> str:
    started = time.monotonic()
    with pytest.raises(ModelFileRefused) as refused:
        fd = open_model_file(str(path))
        os.close(fd)
    assert time.monotonic() - started < 2.0, "a refusal must come at once"
    return str(refused.value)


def _gguf_header(keys: int, *rest: bytes, tensors: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensors, keys) + b"".join(rest)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(tmp_path: Path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    assert "is a FIFO" in _refused(fifo)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused_also_behind_a_link(tmp_path: Path):
    assert "is under /dev" in _refused("/dev/zero")
    link = tmp_path / "model.gguf"
    link.symlink_to("/dev/zero")
    assert "is under /dev" in _refused(link)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="no /proc")
def test_a_kernel_file_is_refused(tmp_path: Path):
    assert "is under /proc" in _refused("/proc/self/environ")
    if Path("/sys/kernel").exists():
        assert "is under /sys" in _refused("/sys/kernel")


def test_a_symlink_loop_is_refused_after_a_bounded_number_of_links(tmp_path: Path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert f"more than {MAX_LINK_HOPS} symbolic links" in _refused(tmp_path / "a")


def test_a_sparse_10_gb_file_is_refused_without_being_read(tmp_path: Path):
    sparse = tmp_path / "sparse.gguf"
    with sparse.open("wb") as handle:
        handle.truncate(10 * 1024**3)
    assert "is not a GGUF file" in _refused(sparse)


def test_a_gguf_header_that_promises_gigabytes_is_refused(tmp_path: Path):
    huge_key = tmp_path / "huge-key.gguf"
    with huge_key.open("wb") as handle:
        handle.write(_gguf_header(1, struct.pack("<Q", 2**30)))
        handle.truncate(10 * 1024**3)  # sparse: the promised bytes are "there"
    assert "GGUF header larger than 256 MiB" in _refused(huge_key)

    many = tmp_path / "many-keys.gguf"
    many.write_bytes(_gguf_header(2**40))
    assert "more than any model has" in _refused(many)

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(_gguf_header(3, struct.pack("<Q", 4), b"ab"))
    assert "ends inside its GGUF header" in _refused(cut)


def test_a_folder_or_a_missing_file_is_refused_with_its_reason(tmp_path: Path):
    assert "is a folder" in _refused(tmp_path)
    assert "cannot be reached" in _refused(tmp_path / "nothing.gguf")
    assert "not an absolute path" in _refused("blobs/sha256-x")


def _bundled_gguf() -> Path | None:
    try:
        from engine.providers.embedded import default_model_path
    except ImportError:
        return None
    found = default_model_path()
    return Path(found) if found and Path(found).exists() else None


@pytest.mark.skipif(_bundled_gguf() is None, reason="the bundled GGUF is not installed")
def test_a_real_gguf_opens_through_the_checked_descriptor_even_behind_a_link(tmp_path: Path):
    link = tmp_path / "sha256-model"
    link.symlink_to(_bundled_gguf())
    tokenizer = open_vocabulary(str(link))
    assert tokenizer.count_text("Hello there") > 0  # type: ignore[attr-defined]
