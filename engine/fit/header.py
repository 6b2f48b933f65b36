"""A GGUF's header: its keys and values and its tensor table, without the weights.

The types, their byte sizes and the file-type names come from the official `gguf` package.
Its `GGUFReader` is not used to walk the file: it materialises every vocabulary string as a
numpy view (42 s for Gemma 3's 262,144 tokens on a loaded two-core machine), where an
estimate needs a few dozen numbers. So the file is opened through the checks the Ollama
counter already uses (engine/providers/model_file.py: a regular file, outside the kernel's
trees, a header of bounded size) and walked here: scalars and strings are kept, long arrays
are kept as their element count, and the tensor table gives each tensor's type and size.
A file cut before its last tensor's end is refused as truncated.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from typing import Any

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType

from engine.providers.model_file import ModelFileRefused, open_model_file

KEEP_ARRAY_ITEMS = 4096  # arrays longer than this (vocabularies, merges) keep only their length
KEEP_STRING_BYTES = 1 << 20  # a chat template is some kilobytes; past this a string is skipped
MAX_TENSOR_NAME = 1 << 16
MAX_DIMS = 8
DEFAULT_ALIGNMENT = 32  # GGUF's, unless `general.alignment` says otherwise

_SCALAR = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.BOOL: "<?",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
}


class GgufUnreadable(Exception):
    """The file is not a GGUF Brim can estimate; the message says why (after the path)."""


@dataclass(frozen=True)
class LongArray:
    """An array too long to keep: its element count only."""

    count: int


@dataclass(frozen=True)
class Tensor:
    name: str
    type_name: str  # GGMLQuantizationType's name: F32, Q4_K, ...
    n_elements: int
    n_bytes: int


@dataclass(frozen=True)
class GgufHeader:
    path: str
    file_bytes: int
    version: int
    metadata: dict[str, Any]
    tensors: tuple[Tensor, ...]

    def get(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(key, default)


class _Reader:
    def __init__(self, fd: int) -> None:
        self._file = io.BufferedReader(io.FileIO(os.dup(fd), "rb"), 1 << 20)

    def close(self) -> None:
        self._file.close()

    def take(self, n: int) -> bytes:
        data = self._file.read(n)
        if len(data) < n:
            raise GgufUnreadable("ends inside its GGUF header (a cut or damaged file)")
        return data

    def skip(self, n: int) -> None:
        self._file.seek(n, os.SEEK_CUR)

    def tell(self) -> int:
        return self._file.tell()

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, limit: int = KEEP_STRING_BYTES) -> str | None:
        n = int(self.unpack("<Q"))
        if n > limit:
            self.skip(n)
            return None
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        vtype = GGUFValueType(kind)
        if vtype in _SCALAR:
            return self.unpack(_SCALAR[vtype])
        if vtype == GGUFValueType.STRING:
            return self.string()
        inner, count = GGUFValueType(self.unpack("<I")), int(self.unpack("<Q"))
        if count > KEEP_ARRAY_ITEMS:
            self._skip_items(inner, count)
            return LongArray(count)
        return [self.value(inner) for _ in range(count)]

    def _skip_items(self, inner: GGUFValueType, count: int) -> None:
        if inner in _SCALAR:
            self.skip(struct.calcsize(_SCALAR[inner]) * count)
            return
        for _ in range(count):
            if inner == GGUFValueType.STRING:
                self.skip(int(self.unpack("<Q")))
            else:
                self.value(inner)


def _tensor_bytes(type_id: int, n_elements: int) -> tuple[str, int]:
    try:
        qtype = GGMLQuantizationType(type_id)
    except ValueError:
        raise GgufUnreadable(f"has a tensor of unknown type {type_id}") from None
    block, size = GGML_QUANT_SIZES[qtype]
    return qtype.name, n_elements // block * size


def read_header(path: str) -> GgufHeader:
    """The header of the GGUF at `path` (absolute or not). GgufUnreadable says why not."""
    try:
        fd = open_model_file(os.path.abspath(path))
    except ModelFileRefused as exc:
        raise GgufUnreadable(str(exc)) from None
    os.lseek(fd, 0, os.SEEK_SET)  # the check read through a duplicate of this descriptor
    reader = _Reader(fd)
    try:
        file_bytes = os.fstat(fd).st_size
        return _walk(reader, path, file_bytes)
    except (ValueError, UnicodeError, struct.error) as exc:
        raise GgufUnreadable(f"has a damaged GGUF header ({exc})") from None
    finally:
        reader.close()
        os.close(fd)


def _walk(reader: _Reader, path: str, file_bytes: int) -> GgufHeader:
    reader.skip(4)  # the magic, checked by open_model_file
    version = int(reader.unpack("<I"))
    n_tensors, n_keys = int(reader.unpack("<Q")), int(reader.unpack("<Q"))
    metadata: dict[str, Any] = {}
    for _ in range(n_keys):
        key = reader.string() or ""
        metadata[key] = reader.value(int(reader.unpack("<I")))
    raw: list[tuple[str, str, int, int, int]] = []
    for _ in range(n_tensors):
        name = reader.string(MAX_TENSOR_NAME)
        n_dims = int(reader.unpack("<I"))
        if name is None or n_dims > MAX_DIMS:
            raise GgufUnreadable("has a tensor table no GGUF writer makes")
        n_elements = 1
        for _ in range(n_dims):
            n_elements *= int(reader.unpack("<Q"))
        type_name, n_bytes = _tensor_bytes(int(reader.unpack("<I")), n_elements)
        offset = int(reader.unpack("<Q"))
        raw.append((name, type_name, n_elements, n_bytes, offset))
    alignment = int(metadata.get("general.alignment") or DEFAULT_ALIGNMENT)
    data_start = -(-reader.tell() // alignment) * alignment
    end = max((offset + n_bytes for *_, n_bytes, offset in raw), default=0) + data_start
    if end > file_bytes:
        raise GgufUnreadable(
            f"is cut short: {file_bytes:,} bytes where its tensors need {end:,} "
            "(a partial download?)"
        )
    tensors = tuple(Tensor(n, t, e, b) for n, t, e, b, _ in raw)
    return GgufHeader(path, file_bytes, version, metadata, tensors)
