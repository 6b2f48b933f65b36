"""What can go wrong with Brim's configuration files.

    ConfigError
     ├── AgentConfigError     an agent file cannot be read, is not TOML, or holds a bad value
     │    └── DuplicateAgentName  a second agent file claims a name an earlier one has
     └── AgentFileChanged     an agent file changed on disk since it was loaded; not overwritten

Every message names the file, the field and the problem, because the person reading it has
the file open in an editor and needs to know which line to fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class ConfigError(Exception):
    """Base of every configuration error."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an agent: the TOML key (None for the whole file) and why."""

    field: str | None
    message: str
    line: int | None = None
    column: int | None = None

    def render(self, source: str) -> str:
        where = [source]
        if self.line is not None:
            where.append(f"line {self.line}, column {self.column}")
        if self.field is not None:
            where.append(self.field)
        return ": ".join([*where, self.message])


class AgentConfigError(ConfigError):
    """An agent that cannot be used, with every problem found (the first is the headline)."""

    def __init__(self, source: Path | str | None, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("AgentConfigError needs at least one problem")
        self.path = Path(source) if isinstance(source, Path) else None
        self.source = str(source) if source is not None else "agent"
        self.problems = tuple(problems)
        super().__init__("\n".join(p.render(self.source) for p in self.problems))

    @property
    def field(self) -> str | None:
        return self.problems[0].field

    @property
    def problem(self) -> str:
        return self.problems[0].message

    @property
    def line(self) -> int | None:
        return self.problems[0].line

    @property
    def column(self) -> int | None:
        return self.problems[0].column


class DuplicateAgentName(AgentConfigError):
    """Two agent files give the same `name`. Listings keep the first (by file name) and show
    this second one as broken; asking for the name by itself is refused as ambiguous, since
    which file the user meant is anyone's guess."""

    def __init__(self, path: Path, name: str, first: Path) -> None:
        super().__init__(path, [Problem("name", f"'{name}' is already used by {first.name}")])
        self.name = name
        self.first = first


class AgentFileChanged(ConfigError):
    """Someone else (another Brim, a text editor) changed the file after it was loaded.

    Saving would throw their edit away, so nothing is written: reload and apply again.
    """

    def __init__(self, path: Path, detail: str = "changed on disk since it was loaded") -> None:
        super().__init__(f"{path}: {detail}; not saved, so that edit is not lost")
        self.path = path
