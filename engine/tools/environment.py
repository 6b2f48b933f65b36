"""The environment a tool's child process gets: Brim's, without Brim's credentials.

Brim reads an engine's API key from the variable an agent's `api_key_env` names, and hands
a key to its own detached child in BRIM_ENGINE_API_KEY. A command the model runs (`printenv`,
a build script, anything it downloads) must not read either, nor any other variable that
holds a credential: the variables every agent names, any variable whose value is one of
the keys Brim knows, and any variable memory's secret detector flags, read as `NAME = value`
(so `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY` with its value, a connection string with a
password) are withheld. The variables that hold search paths, locales and the terminal
are passed on whatever their values look like: their long random-looking folder names are
no credential, and a command cannot run without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.redaction import redact

# Passed on as they are (a value made of paths can look random to the detector).
ALWAYS_PASSED = frozenset(
    {
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "SHELL",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TMPDIR",
        "TMP",
        "TEMP",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "VIRTUAL_ENV",
        "SYSTEMROOT",
        "COMSPEC",
    }
)
_PASSED_PREFIXES = ("LC_", "XDG_")
_PASSED_SUFFIXES = ("PATH",)  # PYTHONPATH, LD_LIBRARY_PATH, MANPATH, ...


@dataclass(frozen=True)
class ChildEnvironment:
    variables: dict[str, str]
    withheld: tuple[str, ...]  # the names left out, sorted


def _always_passed(name: str) -> bool:
    upper = name.upper()
    return (
        upper in ALWAYS_PASSED
        or upper.startswith(_PASSED_PREFIXES)
        or upper.endswith(_PASSED_SUFFIXES)
    )


def _paths(value: str) -> bool:
    """A value made of absolute paths (JAVA_HOME, a list of folders)."""
    parts = [p for p in value.split(os.pathsep) if p]
    return bool(parts) and all(os.path.isabs(p) for p in parts)


def holds_credential(name: str, value: str, known: Iterable[str] = ()) -> bool:
    """Whether the variable `name=value` carries a credential, by the detector or because
    its value holds one of the `known` keys. Paths are read by the shapes of credentials
    only (a long folder name looks random)."""
    spaced = name.replace("_", " ")  # GITHUB_TOKEN reads as the words "GITHUB TOKEN"
    return redact(f"{spaced} = {value}", known, prose=not _paths(value)).count > 0


def child_environment(
    withheld: Iterable[str] = (),
    known: Iterable[str] = (),
    base: Mapping[str, str] | None = None,
) -> ChildEnvironment:
    """`base` (this process's environment) without the variables named in `withheld` and
    without every other variable that holds a credential."""
    names = {n.upper() if os.name == "nt" else n for n in withheld if n}
    keys = tuple(k for k in known if k)
    source = os.environ if base is None else base
    kept: dict[str, str] = {}
    left_out: list[str] = []
    for name, value in source.items():
        named = (name.upper() if os.name == "nt" else name) in names
        if named or (not _always_passed(name) and holds_credential(name, value, keys)):
            left_out.append(name)
        else:
            kept[name] = value
    return ChildEnvironment(kept, tuple(sorted(left_out)))
