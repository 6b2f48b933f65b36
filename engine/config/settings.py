"""App settings: small facts Brim remembers between runs (last conversation, window
geometry, panel sizes), in one JSON file.

They are conveniences, never something a run depends on, so an unreadable file yields empty
settings instead of an error (and the next save replaces it). Updates are read-modify-write
under the file's lock, so two Brim windows saving different keys do not undo each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.atomic import atomic_write_text, file_lock


def load_settings(path: Path) -> dict[str, Any]:
    """The saved settings, or {} when the file is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_settings(path: Path, **changes: Any) -> dict[str, Any]:
    """Merge `changes` into the saved settings (a None value removes the key) and return
    the settings now saved. Values must be JSON values."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        settings = load_settings(path)
        for key, value in changes.items():
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
        atomic_write_text(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")
    return settings
