"""Opening the model file an engine names (Ollama's `/api/show` `FROM` line) safely.

The path comes from the engine, so it is data, not a file Brim chose: it can name a FIFO
(an `open()` that waits for a writer for ever, deaf to SIGTERM), a device (`/dev/zero`
reads without end), a kernel file under `/proc` or `/sys`, a symlink loop, or a GGUF whose
header promises gigabytes of vocabulary. So the file is opened only when it is a regular
file reached through a bounded number of links, outside the kernel's trees, and its GGUF
header is walked here first with a budget of bytes and seconds; the tokenizer then opens the
very file that was checked (`/proc/self/fd/N` where there is one), so a swap after the check
changes nothing. Every refusal says why, for `/context`'s Counting line.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import time
from pathlib import Path

MAX_LINK_HOPS = 16
REFUSED_TREES = ("/proc", "/sys", "/dev")
GGUF_MAGIC = b"GGUF"
HEADER_BYTES = 24  # magic, version, tensor count, key/value count
# The header (keys, values, the vocabulary) a tokenizer reads: real ones are a few MB to
# some tens of MB (a 256K vocabulary with merges); past this it is not a model's header.
MAX_HEADER_BYTES = 256 * 1024 * 1024
MAX_KEYS = 100_000
MAX_TENSORS = 1_000_000
MAX_NESTING = 3  # arrays of arrays
READ_DEADLINE_S = 10.0
_CHECK_EVERY = 4096  # items between looks at the clock

# GGUF value types (ggml/include/gguf.h): fixed sizes; 8 is a string, 9 an array.
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


class ModelFileRefused(Exception):
    """The named file is not one Brim opens; the message says why (after the path)."""


def resolve(path: str) -> str:
    """`path` with every symbolic link followed, at most MAX_LINK_HOPS of them."""
    if not os.path.isabs(path):
        raise ModelFileRefused("is not an absolute path")
    done = "/"
    todo = [p for p in path.split("/") if p]
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, part)
        try:
            info = os.lstat(here)
        except OSError as exc:
            raise ModelFileRefused(f"cannot be reached ({exc.strerror or exc})") from None
        if not stat.S_ISLNK(info.st_mode):
            done = here
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise ModelFileRefused(
                f"goes through more than {MAX_LINK_HOPS} symbolic links (a loop?)"
            )
        target = os.readlink(here)
        todo = [p for p in target.split("/") if p] + todo
        if target.startswith("/"):
            done = "/"
    return done


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_model_file(path: str) -> int:
    """A read descriptor of the GGUF at `path`, checked (ModelFileRefused otherwise)."""
    real = resolve(path)
    for tree in REFUSED_TREES:
        if real == tree or real.startswith(tree + "/"):
            raise ModelFileRefused(f"is under {tree}, a tree of kernel and device files")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(real, flags)  # O_NONBLOCK: a FIFO opens at once instead of waiting
    except OSError as exc:
        raise ModelFileRefused(f"cannot be opened ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ModelFileRefused(f"is {_kind(info.st_mode)}, not a model file")
        if info.st_size < HEADER_BYTES:
            raise ModelFileRefused(f"is {info.st_size} bytes, too small to be a GGUF")
        os.set_blocking(fd, True)
        check_gguf_header(fd, info.st_size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def fd_path(fd: int) -> str:
    """A path that opens the file behind `fd` itself (Linux and most Unix have one)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        candidate = f"{folder}/{fd}"
        if os.path.exists(candidate):
            return candidate
    raise ModelFileRefused("cannot be reopened by descriptor on this system")


class _Budget:
    """Reads from the header, within MAX_HEADER_BYTES and READ_DEADLINE_S."""

    def __init__(self, fd: int, size: int) -> None:
        self._file = io.BufferedReader(io.FileIO(os.dup(fd), "rb"), 1024 * 1024)
        self._size = size
        self.read_bytes = 0
        self._items = 0
        self._deadline = time.monotonic() + READ_DEADLINE_S

    def close(self) -> None:
        self._file.close()

    def take(self, n: int) -> bytes:
        self._spend(n)
        data = self._file.read(n)
        if len(data) < n:
            raise ModelFileRefused("ends inside its GGUF header (a cut or damaged file)")
        return data

    def skip(self, n: int) -> None:
        self._spend(n)
        self._file.seek(n, os.SEEK_CUR)

    def _spend(self, n: int) -> None:
        self.read_bytes += n
        if self.read_bytes > min(MAX_HEADER_BYTES, self._size):
            if self.read_bytes > self._size:
                raise ModelFileRefused("ends inside its GGUF header (a cut or damaged file)")
            raise ModelFileRefused(
                f"has a GGUF header larger than {MAX_HEADER_BYTES // (1024 * 1024)} MiB"
            )
        self._items += 1
        if self._items % _CHECK_EVERY == 0 and time.monotonic() > self._deadline:
            raise ModelFileRefused(f"took more than {READ_DEADLINE_S:g} s to read its header")

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])


def _skip_value(budget: _Budget, kind: int, depth: int = 0) -> None:
    if kind in _FIXED:
        budget.skip(_FIXED[kind])
    elif kind == _STRING:
        budget.skip(budget.u64())
    elif kind == _ARRAY:
        if depth >= MAX_NESTING:
            raise ModelFileRefused("nests arrays deeper than any GGUF does")
        inner, count = budget.u32(), budget.u64()
        if inner in _FIXED:
            budget.skip(_FIXED[inner] * count)
            return
        for _ in range(count):
            _skip_value(budget, inner, depth + 1)
    else:
        raise ModelFileRefused(f"has a GGUF value of unknown type {kind}")


def check_gguf_header(fd: int, size: int) -> None:
    """Walk the GGUF header (its keys and values, where the vocabulary lives) within the
    budget: ModelFileRefused for anything that is not a GGUF a tokenizer can read safely."""
    budget = _Budget(fd, size)
    try:
        if budget.take(4) != GGUF_MAGIC:
            raise ModelFileRefused("is not a GGUF file (it does not begin with 'GGUF')")
        version = budget.u32()
        if version not in (2, 3):
            raise ModelFileRefused(f"is GGUF version {version}, which Brim does not read")
        tensors, keys = budget.u64(), budget.u64()
        if tensors > MAX_TENSORS or keys > MAX_KEYS:
            raise ModelFileRefused(
                f"claims {tensors:,} tensors and {keys:,} keys, more than any model has"
            )
        for _ in range(keys):
            budget.skip(budget.u64())  # the key's name
            _skip_value(budget, budget.u32())
    finally:
        budget.close()


def refusal_text(path: str, exc: ModelFileRefused) -> str:
    """The refusal as `/context` says it."""
    return f"the model file Ollama names ({Path(path)}) {exc}; it was not opened"


def open_vocabulary(path: str) -> object:
    """A `GgufTokenizer` (vocabulary only) for the GGUF at `path`, opened through the
    checked descriptor. ModelFileRefused when the file is not one to open; whatever
    llama.cpp raises for a GGUF it cannot load."""
    fd = open_model_file(path)
    try:
        from engine.providers.gguf_tokenizer import GgufTokenizer

        return GgufTokenizer(fd_path(fd))
    finally:
        os.close(fd)
