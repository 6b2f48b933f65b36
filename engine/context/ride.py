"""One request for two jobs: memory's extraction rides compaction's checkpoint request.

Before a compaction that replays the conversation as last sent, the memory extraction and
the checkpoint both ask the model on the same cached conversation, each with an instruction
of its own. Sent apart, the engine evaluates both instructions and the model answers twice;
sent together, one request carries the checkpoint instruction, then memory's, and one
answer holds both parts: the checkpoint first, then a line `Memory:` and memory's JSON.

`Ride` is the meeting point. Compaction offers one to the pre-summary hook (memory's) with
the replayed prefix; the hook, ready to send its request on that prefix, calls `join` with
its instruction and the room its answer needs, and waits. Compaction then sends the
combined request when the free-form checkpoint is asked and both answers fit the window,
and hands the hook its part (`deliver`); otherwise it declines, and the hook sends its own
request as before. The hook's part is "" when the answer has no memory part.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# The line that opens memory's part of a combined answer.
MEMORY_PART = "Memory:"
_MEMORY_LINE = re.compile(r"^[ \t>*#_`]*memory[ \t*_`]*:[ \t*_`]*", re.IGNORECASE | re.MULTILINE)
_MEMORY_JSON = re.compile(r"\{\s*\"memories\"")


@dataclass
class Joined:
    """The rider's instruction and the answer room it needs."""

    instruction: str
    max_tokens: int


@dataclass
class Ride:
    """Where compaction's checkpoint request and memory's request meet (see above)."""

    joined: Joined | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _answer: asyncio.Future[str | None] | None = None

    async def join(self, instruction: str, max_tokens: int) -> str | None:
        """The rider's side: its part of the combined answer, or None when compaction
        declined to carry it (then it sends its own request)."""
        self._answer = asyncio.get_running_loop().create_future()
        self.joined = Joined(instruction, max_tokens)
        self._arrived.set()
        return await self._answer

    async def wait(self, hook: asyncio.Task[None]) -> Joined | None:
        """Compaction's side: the rider once it joined, or None when the hook finished
        without joining (it had nothing to ask the model on the replayed prefix)."""
        arrived = asyncio.ensure_future(self._arrived.wait())
        try:
            await asyncio.wait({arrived, hook}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not arrived.done():
                arrived.cancel()
        return self.joined

    def deliver(self, part: str | None) -> None:
        """Hand the rider its part of the answer (None: declined, it asks alone)."""
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(part)

    def decline(self) -> None:
        self.deliver(None)


def split_answer(text: str) -> tuple[str, str]:
    """A combined answer as (the checkpoint, memory's part): memory's part starts at the
    last `Memory:` line, or else at its JSON object; without either it is ""."""
    lines = list(_MEMORY_LINE.finditer(text))
    if lines:
        cut = lines[-1]
        return text[: cut.start()].rstrip(), text[cut.end() :].strip()
    found = _MEMORY_JSON.search(text)
    if found:
        return text[: found.start()].rstrip(), text[found.start() :].strip()
    return text, ""


class HookRun:
    """The pre-summary hook (memory's extraction) running beside compaction: started at
    once, met on its `Ride` where it has one, and never failing compaction (its errors are
    logged). `close` stops it where compaction ends first (a cancel, a failure)."""

    def __init__(self, hook: Callable[[], Awaitable[None]] | None, ride: Ride | None) -> None:
        """`hook` is called inside the task, so a compaction stopped before the task ran
        leaves no coroutine that was never awaited."""
        self.ride = ride if hook is not None else None
        self._task = asyncio.ensure_future(_quietly(hook)) if hook is not None else None

    async def joined(self) -> Joined | None:
        """The rider, once it joined; None (the hook then finished) where it did not."""
        if self._task is None:
            return None
        found = await self.ride.wait(self._task) if self.ride is not None else None
        if found is None:
            await self._task
        return found

    async def finish(self, part: str | None = None) -> None:
        """Hand the rider its part (None: it asks alone) and wait for the hook to end."""
        if self.ride is not None:
            self.ride.deliver(part)
        if self._task is not None:
            await self._task

    def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


async def _quietly(hook: Callable[[], Awaitable[None]]) -> None:
    try:
        await hook()
    except Exception:
        log.warning("the pre-summary hook failed; compacting anyway", exc_info=True)
