"""The engine's way to the shipped files under resources/ (prompts, the default agent file).

They are read with `importlib.resources`, so they are found the same way in a checkout, an
installed wheel and the frozen bundle. A missing file is a broken install, reported with
the file's name and where it was looked for, never a silent empty prompt.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

PACKAGE = "resources"


class ResourceMissing(LookupError):
    """A file Brim ships is not where the install should have put it."""


def resource_bytes(*parts: str) -> bytes:
    """A shipped file's bytes, by its path under resources/ (one name per part)."""
    try:
        node = resources.files(PACKAGE)
        # One part per step: a MultiplexedPath's joinpath takes one name on Python 3.11.
        for part in parts:
            node = node / part
        return node.read_bytes()
    except (ModuleNotFoundError, OSError) as exc:
        name = "/".join(parts)
        raise ResourceMissing(
            f"Brim's resource file {name!r} is missing (looked in the {PACKAGE!r} package: "
            f"{exc}); reinstall Brim"
        ) from exc


def resource_text(*parts: str) -> str:
    """A shipped text file, exactly as stored (UTF-8, no newline added or taken away)."""
    return resource_bytes(*parts).decode("utf-8")


def prompt(name: str) -> str:
    """The prompt `resources/prompts/<name>.txt`, with its placeholders still in it."""
    return resource_text("prompts", f"{name}.txt")


def prompt_table(name: str) -> dict[str, Any]:
    """The structured prompt text `resources/prompts/<name>.toml` (lists of questions)."""
    return tomllib.loads(resource_text("prompts", f"{name}.toml"))


def default_agent_file() -> str:
    """The agent file a fresh install starts with (resources/agents/default.toml)."""
    return resource_text("agents", "default.toml")
