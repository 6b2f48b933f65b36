"""The hidden JSON files at the memory root: read tolerantly, written atomically.

A state file that is not valid JSON (a hand edit gone wrong, a disk error) is moved aside as
`NAME.corrupt-STAMP` and treated as empty, never deleted: the person can still look at it,
and the next write starts a sound one. A file that cannot be read at all (permissions) is
not moved; the error is the caller's to handle.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from engine.atomic import atomic_write_text

log = logging.getLogger(__name__)


def move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}-{os.getpid()}")
    os.replace(path, target)
    return target


def read_json_object(path: Path) -> dict[str, Any]:
    """The file's object; `{}` when it does not exist or was corrupt (then moved aside)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        value = None
    if not isinstance(value, dict):
        aside = move_aside(path)
        log.warning("memory: %s was not valid; moved aside to %s", path.name, aside.name)
        return {}
    return value


def write_json_object(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
