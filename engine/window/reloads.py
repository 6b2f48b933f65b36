"""Whether Ollama reloaded the model between two of Brim's requests, and why.

Ollama unloads a model when its keep-alive runs out, and reloads it whenever a request asks
for other runner options (`num_ctx`, and from 0.30 `shift`) than the loaded ones: another
program on the same server, or an unpinned request after one that pinned. A reload costs the
prompt cache (the next request evaluates the whole prompt again) and, for an unpinned agent,
may come with another window: Ollama chooses that one itself, and steps it down when memory
is short. Brim's own requests all carry the same options, so none of them reloads the model.

Two readings tell: the final chunk's `load_duration` and `/api/ps`. `load_duration` is the
time from the request's arrival to a runner ready (server/routes.go, ChatHandler:
`checkpointLoaded - checkpointStart`), so it is never 0: a few milliseconds of bookkeeping
on a loaded model, a second or more when the request had to start a runner and read the
weights. `/api/ps` after each answer gives the window the model runs with and its expiry.

- Brim's request loaded it (`load_duration` of RELOAD_MIN_S or more) though it was loaded
  after the previous answer: if the expiry read then had passed when the request was sent,
  the keep-alive ran out; otherwise something else unloaded or reloaded it meanwhile.
- The window changed though Brim's request loaded nothing: another client loaded it with
  that window, and Brim's requests (naming no num_ctx) run on it.

The functions are pure, so every rule is checked from a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.providers.base import LoadedModel
from engine.window.learning import article

# A request whose model was loaded waits milliseconds; one that loads it, a second or more
# (the smallest models load in about half of one). Between the two: a reload.
RELOAD_MIN_S = 0.25

ReloadCause = Literal["expired", "another_client"]


@dataclass(frozen=True)
class Reload:
    """A reload seen after an answer, with the figures that show it."""

    cause: ReloadCause
    old: int | None  # the window the model ran with before
    new: int | None  # the window it runs with now
    load_s: float | None  # how long Brim's request waited for the load (None: it loaded nothing)

    @property
    def window_changed(self) -> bool:
        return self.old is not None and self.new is not None and self.old != self.new


def loaded_by_request(load_s: float | None) -> bool:
    """Whether the request had to load the model before it could answer."""
    return load_s is not None and load_s >= RELOAD_MIN_S


def reload_seen(
    before: LoadedModel | None,
    now: LoadedModel | None,
    *,
    load_s: float | None,
    sent_at: float,
) -> Reload | None:
    """The reload between the reading `before` (after the previous answer, or at the start)
    and `now` (after this answer), for a request sent at `sent_at` (seconds since the epoch)
    whose engine waited `load_s` before it started. A model that was not loaded before is
    loaded by the request as any first request loads it: no reload."""
    if before is None or now is None:
        return None
    changed = before.window is not None and now.window is not None and before.window != now.window
    if loaded_by_request(load_s):
        expired = before.expires_at is not None and before.expires_at <= sent_at
        return Reload("expired" if expired else "another_client", before.window, now.window, load_s)
    if changed:
        return Reload("another_client", before.window, now.window, None)
    return None


def _window(n: int) -> str:
    return f"{article(n)} {n:,} window"


def reload_text(model: str, reload: Reload, *, pinned: int | None, compacts_at: int) -> str:
    """The one line the transcript gets, e.g. "qwen3:8b was reloaded with a 4,096 window by
    another client; Brim now compacts at 3,276"."""
    now = f"Brim now compacts at {compacts_at:,}"
    new = reload.new
    if reload.load_s is None:  # another client's load, which Brim's request ran on
        assert new is not None
        if pinned is not None:
            return (
                f"{model} was reloaded with {_window(new)} by another client; Brim's next "
                f"request loads it back with num_ctx {pinned:,}, and the prompt cache is lost."
            )
        return f"{model} was reloaded with {_window(new)} by another client; {now}."
    took = f"{reload.load_s:.1f} s"
    if reload.cause == "expired":
        head = (
            f"Ollama had unloaded {model} when its keep-alive ran out; loading it again took "
            f"{took}, and the whole prompt was evaluated anew"
        )
    else:
        head = (
            f"{model} had been unloaded or reloaded by another client (with other num_ctx or "
            f"shift options) since Brim's previous request; loading it back took {took}, and "
            "the whole prompt was evaluated anew"
        )
    if reload.window_changed and new is not None and reload.old is not None:
        why = ""
        if pinned is None and new < reload.old:
            why = " (Ollama steps its own choice down when memory is short)"
        return f"{head}. It now runs with {_window(new)}, not {reload.old:,}{why}; {now}."
    return f"{head}."
