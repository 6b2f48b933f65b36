"""What an Ollama version means for Brim, read from Ollama's own history.

- `prompt_eval_count` is the whole prompt (after any cut) on every release but one. The old
  runners report the sequence's inputs, cache hits included. v0.30.0 moved every GGML model
  onto llama-server and reported its `prompt_n`, which leaves out the tokens the prompt cache
  served, so a follow-up read as a fraction of what was sent. v0.30.1 added `cache_n` back
  ("Ollama's pre-0.30 full-context prompt_eval_count semantics", Ollama commit 35fa277).
- `/api/chat` takes `truncate` and `shift` at the top level of the request since v0.12.6.
  `truncate: false` turns the silent cut of an over-long prompt into an HTTP 400, and
  `shift: false` ends an answer at the window instead of sliding it. Older servers decode the
  request with Gin's default JSON binding, which ignores fields it does not know, so there
  the fields would change nothing, and Brim does not send them.
- From v0.30.0 `shift` is a launch setting of the model's llama-server: a request with
  another `shift` than the loaded model's reloads it, so Brim sends the same one every time.
"""

from __future__ import annotations

import re
from typing import Any

Version = tuple[int, int, int]

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")

# The one release whose prompt_eval_count leaves out the cached prefix (its -rc builds too).
CACHE_EXCLUDED_COUNT: Version = (0, 30, 0)
# From this release `/api/chat` takes `truncate` and `shift`.
STRICT_REQUESTS_SINCE: Version = (0, 12, 6)


def parse_version(text: Any) -> Version | None:
    """`/api/version`'s `version` as numbers; None for what says nothing (a dev build's
    "0.0.0", a missing field, a fork's own scheme). A pre-release ("0.30.0-rc5") is the
    release it leads to."""
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text.strip())
    if not match:
        return None
    version = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    return None if version == (0, 0, 0) else version


def counts_whole_prompt(version: Version | None) -> bool:
    """Whether `prompt_eval_count` is the whole prompt: on every version but 0.30.0 (an
    unknown version is taken as current)."""
    return version != CACHE_EXCLUDED_COUNT


def takes_strict_requests(version: Version | None) -> bool:
    """Whether `/api/chat` honours `truncate` and `shift` (unknown: taken as current)."""
    return version is None or version >= STRICT_REQUESTS_SINCE


def version_text(version: Version | None) -> str:
    return ".".join(str(part) for part in version) if version is not None else "unknown"
