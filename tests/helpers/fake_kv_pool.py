"""The KV pool of a llama-server double: the cells the requests in flight hold together.

With `--kv-unified` (llama-server's default when started without `--parallel`: four slots)
every slot draws on one pool of `-c` cells. A request holds its prompt's cells from the
start and one more per token it writes. When a decode finds no room, the real server fails
every request in flight at once with "Context size has been exceeded." (a 500, or an
in-stream error once the answer streams) and frees their cells (tools/server/
server-context.cpp); a request alone never meets it, as no slot's window is above the pool.
Without a unified pool each slot has its own n_ctx / slots cells, and requests never collide.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

POOL_MESSAGE = "Context size has been exceeded."


@dataclass
class KvPool:
    cells: int  # the whole pool (-c)
    shared: bool  # the slots draw on one pool
    _held: dict[int, int] = field(default_factory=dict)
    _failed: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    peak_in_flight: int = 0  # the most chat requests it held at once
    runs_dry: int = 0  # how many times the pool ran out
    # Cells another client keeps holding: failed with the others, it sends its request
    # again at once, so to the requests beside it the pool never drains (0: no such client).
    steady_tenant: int = 0

    def admit(self, key: int, prompt: int) -> bool:
        """A request starts with `prompt` cells; False when that ran the pool dry (and every
        request in flight fails with it)."""
        with self._lock:
            self._held[key] = prompt
            self.peak_in_flight = max(self.peak_in_flight, len(self._held))
            return self._fits(key)

    def grow(self, key: int, tokens: int = 1) -> bool:
        """`tokens` more written (a streamed piece is as many cells as the served model's
        tokens in it, not one); False when this request has failed (by its own tokens or
        because another's ran the pool dry)."""
        with self._lock:
            if key in self._failed:
                return False
            self._held[key] = self._held.get(key, 0) + tokens
            return self._fits(key)

    def release(self, key: int) -> None:
        with self._lock:
            self._held.pop(key, None)
            self._failed.discard(key)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._held)

    def _fits(self, key: int) -> bool:
        if not self.shared or sum(self._held.values()) + self.steady_tenant <= self.cells:
            return True
        self.runs_dry += 1
        self._failed.update(k for k in self._held if k != key)
        self._held.clear()  # the server releases every slot it failed
        return False
