"""The last two requests a conversation sent, kept for "What the model saw".

The context manager hands each request the engine accepted to `record` (wired in
engine/session/wiring.py); that tells the transcript where the request starts (a
`LastRequestEvent`). `/context show` asks for the whole view (`show`, when the session
announces it took the command): the request rendered
as the engine renders it where Brim can ask (llama-server's /apply-template, the embedded
model's template), else its wire messages, with each part's tokens and the changes from
the request before (engine/report/last_request.py), in one `RequestViewEvent`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.commands import CONTEXT_SHOW, parse_command
from engine.context.replay import Replay
from engine.events import AcceptedEvent, Event, EventSink, LastRequestEvent, RequestViewEvent
from engine.messages import Message
from engine.providers.base import PromptText
from engine.report.last_request import (
    RequestCounter,
    first_conversation_message,
    request_changes,
    request_parts,
    tool_name,
    user_turns_from,
)

log = logging.getLogger(__name__)

RenderPrompt = Callable[[list[Message], list[dict[str, Any]]], Awaitable[PromptText | None]]


@dataclass(frozen=True)
class RequestBinding:
    """What the record reads of the loop it was wired with: the session's counter, the
    engine's renderer (None where it has none), where `record` tells the cut, and the
    conversation's live history (its checkpoints, where the request starts in it)."""

    counter: RequestCounter
    render: RenderPrompt | None
    emit: EventSink
    history: Callable[[], list[Message]]


class LastRequests:
    """The last two requests of the open conversation (see the module docstring)."""

    def __init__(self) -> None:
        self._sent: list[Replay] = []
        self._binding: RequestBinding | None = None
        self._showing: asyncio.Task[None] | None = None

    def bind(self, binding: RequestBinding) -> None:
        """A loop was wired: its counter and engine from now on."""
        self._binding = binding

    def forget(self) -> None:
        """Another conversation opened: nothing of this one's requests carries over."""
        self._sent = []

    @property
    def sent(self) -> list[Replay]:
        return list(self._sent)

    def record(self, request: Replay) -> None:
        """The engine accepted `request`: kept (with the one before) and its start told."""
        self._sent = [*self._sent[-1:], request]
        if self._binding is None:
            return
        first = first_conversation_message(request)
        self._binding.emit(
            LastRequestEvent(
                first_message=first.id if first is not None else "",
                first_role=first.role if first is not None else "",
                user_turns_from=user_turns_from(first, self._binding.history(), request),
                messages=len(request.messages),
                tokens=request.tokens,
            )
        )

    def observe(self, event: Event) -> None:
        """The session took `/context show` (its AcceptedEvent): answered on the loop's sink."""
        if not isinstance(event, AcceptedEvent) or self._binding is None:
            return
        command = parse_command(event.text)
        if command is not None and command.text == CONTEXT_SHOW:
            self.show(self._binding.emit)

    def show(self, emit: EventSink) -> None:
        """`/context show`: the view told on `emit`, at once where no engine renders it,
        else once the engine has rendered it."""
        binding = self._binding
        if not self._sent or binding is None:
            emit(RequestViewEvent(sent=False))
            return
        if binding.render is None:
            emit(self.view(binding, None))
            return
        self._showing = asyncio.get_running_loop().create_task(self._rendered(binding, emit))

    async def settle(self) -> None:
        """Wait for a view the engine is rendering (the session closes: it is told first)."""
        if self._showing is not None:
            await asyncio.gather(self._showing, return_exceptions=True)
            self._showing = None

    async def _rendered(self, binding: RequestBinding, emit: EventSink) -> None:
        assert binding.render is not None
        last = self._sent[-1]
        try:
            prompt = await binding.render(list(last.messages), list(last.tools))
        except Exception:  # the view is a view: the wire messages still say it
            log.warning("the engine could not render the last request", exc_info=True)
            prompt = None
        emit(self.view(binding, prompt))

    def view(self, binding: RequestBinding, prompt: PromptText | None) -> RequestViewEvent:
        """The last request, its parts and its changes, as one event."""
        before = self._sent[-2] if len(self._sent) > 1 else None
        last = self._sent[-1]
        counter = binding.counter
        checkpoints = [m.content for m in binding.history() if m.kind == "summary"]
        return RequestViewEvent(
            sent=True,
            at=last.at,
            engine_tokens=last.tokens,
            counted_tokens=counter.count_request(list(last.messages), list(last.tools)),
            parts=[p.to_dict() for p in request_parts(last, counter, checkpoints)],
            changes=[c.to_dict() for c in request_changes(before, last, counter)],
            compared=before is not None,
            messages=[m.to_dict() for m in last.messages],
            tools=[tool_name(t) for t in last.tools],
            rendered=prompt.text if prompt is not None else "",
            rendered_by=prompt.rendered_by if prompt is not None else "",
        )
