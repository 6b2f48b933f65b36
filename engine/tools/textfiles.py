"""Telling text from binary, and reading text without trusting its size or encoding.

The file tools meet whatever the workspace holds: a multi-gigabyte log, a Latin-1 CSV, a
compiled library, a FIFO. None of them may hang the run or fill its memory, so the rules are
shared here: only regular files are opened, a sniff of the first few kilobytes decides
binary, and everything else is read in bounded pieces.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from engine.tools.errors import ToolError

SNIFF_BYTES = 8_192
# Share of control bytes above which a sample that is not UTF-8 is taken for binary.
BINARY_CONTROL_SHARE = 0.3
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
UTF16_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def looks_binary(sample: bytes) -> bool:
    """True for bytes no one would read as text: a NUL, or (when the sample is not UTF-8)
    mostly control bytes. Latin-1 and other 8-bit text counts as text."""
    if not sample:
        return False
    if sample.startswith(UTF16_BOMS):
        return False
    if b"\0" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")("strict").decode(sample, final=False)
        return False
    except UnicodeDecodeError:
        pass
    controls = sum(1 for b in sample if b < 32 and b not in _TEXT_CONTROLS)
    return controls / len(sample) > BINARY_CONTROL_SHARE


def wide_encoding(sample: bytes) -> str | None:
    """The codec of a file that starts with a UTF-16 or UTF-32 byte-order mark."""
    if sample.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def regular_file_size(path: Path, shown: str) -> int:
    """The size of a regular file, or a `ToolError` saying what `shown` is instead. Devices
    and FIFOs are refused before they are opened: reading one could block forever."""
    try:
        st = os.stat(path)
    except FileNotFoundError as exc:
        raise ToolError(f"{shown}: no such file") from exc
    except NotADirectoryError as exc:
        raise ToolError(f"{shown}: a parent of this path is a file, not a folder") from exc
    except OSError as exc:
        raise ToolError(f"{shown}: cannot be read ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a folder; use list_directory for folders")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe)")
    return st.st_size


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size:,} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size:,} B"
