"""What the bench measured each bundled model writing when compaction asked it.

`resources/summarizers.toml` is written by `python -m bench summarizer_seed --write`, which
runs compactions on the real model and asks it everything at each (the free-form
checkpoint, the guided questions, the memory extraction). A model it lists starts its
summarizer record from those counts (engine/context/summarizer_record.py), so its first
compaction in a user's conversation already skips what it was measured unable to write.

A model is matched by the name the engine serves it under or the agent gives it, reduced to
its file name without `.gguf` (llama-server reports the GGUF's path), against the names the
file lists for it, case aside. A model the bench did not measure has no seed: it is asked.
A file that cannot be read is no seed, logged, never an error.
"""

from __future__ import annotations

import logging
import tomllib
from functools import cache
from pathlib import PurePath
from typing import Any

from engine.resources import ResourceMissing, resource_text

log = logging.getLogger(__name__)

SEED_FILE = "summarizers.toml"


def model_stem(model: str) -> str:
    """`model` as the seed names it: its file name without `.gguf`, lowercase."""
    name = PurePath(model.replace("\\", "/")).name if model else ""
    if name.lower().endswith(".gguf"):
        name = name[: -len(".gguf")]
    return name.lower()


@cache
def _measured() -> tuple[dict[str, Any], ...]:
    try:
        table = tomllib.loads(resource_text(SEED_FILE))
    except (ResourceMissing, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        log.warning("the bundled models' summarizer measurements cannot be read: %s", exc)
        return ()
    models = table.get("model", [])
    return tuple(m for m in models if isinstance(m, dict)) if isinstance(models, list) else ()


def seed_for(*models: str) -> dict[str, int]:
    """The measured counts of the first of `models` the bench measured, or {}."""
    for model in models:
        stem = model_stem(model)
        if not stem:
            continue
        for entry in _measured():
            names = entry.get("names", [])
            if isinstance(names, list) and stem in {str(n).lower() for n in names}:
                counts = entry.get("counts", {})
                if isinstance(counts, dict):
                    return {str(k): v for k, v in counts.items() if isinstance(v, int)}
    return {}
