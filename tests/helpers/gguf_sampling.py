"""A copy of a GGUF whose maker names its sampling: `general.sampling.*` written with the `gguf`
package's own `copy_with_new_metadata` (what its gguf_new_metadata script does)."""

from __future__ import annotations

from pathlib import Path

import gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata, get_field_data

# Brim's names to the GGUF keys and their value types (the gguf package's constants).
_KEYS = {
    "temperature": (gguf.Keys.General.SAMPLING_TEMP, gguf.GGUFValueType.FLOAT32),
    "top_p": (gguf.Keys.General.SAMPLING_TOP_P, gguf.GGUFValueType.FLOAT32),
    "top_k": (gguf.Keys.General.SAMPLING_TOP_K, gguf.GGUFValueType.INT32),
    "min_p": (gguf.Keys.General.SAMPLING_MIN_P, gguf.GGUFValueType.FLOAT32),
    "repeat_penalty": (gguf.Keys.General.SAMPLING_PENALTY_REPEAT, gguf.GGUFValueType.FLOAT32),
}


def copy_with_sampling(source: Path, target: Path, **sampling: float) -> Path:
    """`source` copied to `target` with `general.sampling.*` set from Brim-named values."""
    reader = gguf.GGUFReader(str(source), "r")
    arch = get_field_data(reader, gguf.Keys.General.ARCHITECTURE)
    writer = gguf.GGUFWriter(str(target), arch=arch, endianess=reader.endianess)
    alignment = get_field_data(reader, gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment
    new = {
        _KEYS[name][0]: MetadataDetails(_KEYS[name][1], value) for name, value in sampling.items()
    }
    copy_with_new_metadata(reader, writer, new, [])
    return target
