"""What Ollama's own answers say, read defensively: `/api/show` (the model file, the
Modelfile's `num_ctx`, the training length, whether the model calls tools) and `/api/ps`
(the entry of a loaded model and when it expires).

Every reader takes whatever the server sent and gives None for a shape it does not know:
one odd field must not fail a report.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from engine.providers.http_base import as_window

_NUM_CTX_LINE = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)
_FROM_LINE = re.compile(r"^\s*FROM\s+(\S.*?)\s*$", re.MULTILINE | re.IGNORECASE)
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"})


def modelfile_blob(modelfile: Any) -> str | None:
    """The file the model runs from: the `FROM` line of `/api/show`'s modelfile that is not a
    comment (Ollama writes `# FROM name` as advice, then `FROM /…/blobs/sha256-…`). It is a
    path on the machine Ollama runs on; a name (`FROM llama3.1`) is not a file."""
    if not isinstance(modelfile, str):
        return None
    for match in _FROM_LINE.finditer(modelfile):
        target = match.group(1).strip().strip('"')
        if os.path.isabs(target):
            return target
    return None


def runs_here(base_url: str) -> bool:
    """Whether the Ollama at `base_url` runs on this machine (a loopback address), so the
    model file its `/api/show` names is a file Brim can open too."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


def modelfile_num_ctx(parameters: Any) -> int | None:
    """`num_ctx` from `/api/show`'s `parameters` text (one Modelfile parameter per line)."""
    if not isinstance(parameters, str):
        return None
    match = _NUM_CTX_LINE.search(parameters)
    return as_window(match.group(1)) if match else None


# A Modelfile's PARAMETER names for the settings Brim knows (Ollama's api/types.go Options,
# the same names as Brim's).
_SAMPLING_PARAMETERS = {
    "temperature": float,
    "top_p": float,
    "top_k": int,
    "min_p": float,
    "repeat_penalty": float,
    "seed": int,
}


def modelfile_sampling(parameters: Any) -> dict[str, float]:
    """The sampler settings a Modelfile names, from `/api/show`'s `parameters` text (one
    `name value` per line, as Ollama writes them); a value it cannot read is passed over."""
    if not isinstance(parameters, str):
        return {}
    out: dict[str, float] = {}
    for line in parameters.splitlines():
        name, _, value = line.strip().partition(" ")
        kind = _SAMPLING_PARAMETERS.get(name)
        if kind is None:
            continue
        try:
            out[name] = kind(value.strip().strip('"'))
        except ValueError:
            continue
    return out


def thinks(capabilities: Any) -> bool | None:
    """`capabilities` of /api/show lists `thinking` for a model that reasons (Ollama then
    thinks by default); None where the server sends no list."""
    if not isinstance(capabilities, list) or not capabilities:
        return None
    return "thinking" in capabilities


def training_length(model_info: Any) -> int | None:
    """`model_info["<arch>.context_length"]`, `<arch>` from `general.architecture`."""
    if not isinstance(model_info, dict):
        return None
    arch = model_info.get("general.architecture")
    if isinstance(arch, str) and arch:
        found = as_window(model_info.get(f"{arch}.context_length"))
        if found is not None:
            return found
    for key, value in model_info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            return as_window(value)
    return None


def calls_tools(capabilities: Any) -> bool | None:
    """`capabilities` of /api/show lists `tools` for a model that calls them; older servers
    send no list (then: not known, and the tools are sent)."""
    if not isinstance(capabilities, list) or not capabilities:
        return None
    return "tools" in capabilities


def has_thinking(capabilities: Any) -> bool | None:
    """`capabilities` of /api/show lists `thinking` for a model that reasons before it
    answers (server/routes.go thinks by default for it, refuses `think` to any other); no
    list: not known."""
    if not isinstance(capabilities, list) or not capabilities:
        return None
    return "thinking" in capabilities


def same_model(requested: str, listed: str | None) -> bool:
    """Ollama names default to the `latest` tag: `llama3.1` is `llama3.1:latest`."""
    if not listed:
        return False

    def norm(name: str) -> str:
        return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"

    return norm(requested) == norm(listed)


def running_entry(running: Any, model: str) -> dict[str, Any] | None:
    """`model`'s entry in an `/api/ps` answer; entries of any other shape are passed over
    (one model listed oddly must not hide the one Brim asks about)."""
    models = running.get("models") if isinstance(running, dict) else None
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict):
            continue
        names = [entry.get("model"), entry.get("name")]
        if any(isinstance(n, str) and same_model(model, n) for n in names):
            return entry
    return None


def expiry(value: Any) -> float | None:
    """`expires_at` of an `/api/ps` entry (RFC 3339, nanoseconds) as seconds since the
    epoch; None for anything else, or Go's zero time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError):
        return None
    return when if when > 0 else None
