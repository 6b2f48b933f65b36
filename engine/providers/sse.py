"""Server-sent events as the OpenAI-compatible engines write them.

Standard SSE (fields `data`, `event`, events ended by a blank line), plus one dialect:
llama-server before late 2025 reported a failure inside a 200 stream as a line
`error: {...}` (a field name SSE does not define), which must not be skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from engine.providers.wire import MAX_LINE_BYTES, WireError


@dataclass(frozen=True)
class SseEvent:
    event: str  # "message" unless the server named it; "error" for llama-server's error field
    data: str


async def iter_sse(
    lines: AsyncIterator[str], *, max_event: int = MAX_LINE_BYTES
) -> AsyncIterator[SseEvent]:
    """The events of a stream. One event may not hold more than `max_event` characters of
    data, however many `data:` lines it spreads them over (WireError), as no line may."""
    event = "message"
    data: list[str] = []
    size = 0
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent(event, "\n".join(data))
            event, data, size = "message", [], 0
            continue
        if line.startswith(":"):  # comment / keep-alive
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            size += len(value) + 1
            if size > max_event:
                raise WireError(f"a stream event longer than {max_event // (1024 * 1024)} MiB")
            data.append(value)
        elif name == "event":
            event = value
        elif name == "error":
            yield SseEvent("error", value)
    if data:
        yield SseEvent(event, "\n".join(data))
