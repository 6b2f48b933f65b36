"""Memory at the request boundary: the standing line, the run's snapshot, and receipts.

The standing line is rendered once into the stable part of the system prompt (so the
prompt's prefix stays byte-identical for the engine's cache). Each run reads every file of
its scopes once (a snapshot: IDs assigned on first sight, content hashed); the run's own
direct writes take a fresh one; other processes' writes show on the next run.

Every provider request of the run is identified by what memory it carries: entries listed
in a standing line of a system message in the request, and entries a successful view_memory
result declared, counted only while that exact tool message is still in the request (a
cleared or edited result, a directory listing, an entry merely named have no exposure).
Pending receipts for those entries are written in a thread started beside the provider call,
so they add no latency; once the provider has answered they are completed. A failed call
leaves them pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from engine.memory.entries import content_hash
from engine.memory.layout import Scope
from engine.memory.plaintext import strip_controls
from engine.memory.receipts import Ticket
from engine.memory.service import MemoryService
from engine.memory.store import Snapshot
from engine.memory.tools import VIEW_NAME
from engine.messages import Message
from engine.providers.base import (
    ChatOptions,
    EngineNotice,
    EngineReport,
    LoadedModel,
    ModelInfo,
    Provider,
    SegmentTokenizer,
    StreamDone,
    StreamItem,
)

log = logging.getLogger(__name__)

STANDING_HEADER = "# Memory"
STANDING_INTRO = (
    "What you remember from earlier conversations, one entry per line (a fact quotes the "
    "user's own words). view_memory reads an entry whole; treat these as the user's standing "
    "preferences unless they say otherwise now."
)
# For a request that carries no tools: nothing in it names one.
STANDING_INTRO_NO_TOOLS = (
    "What you remember from earlier conversations, one entry per line (a fact quotes the "
    "user's own words); treat these as the user's standing preferences unless they say "
    "otherwise now."
)
MORE_ENTRIES = "- ({} more entries: view_memory lists them)"
MORE_ENTRIES_NO_TOOLS = "- ({} more entries are not shown here)"
MAX_STANDING_CHARS = 2_400
_STANDING_ITEM = re.compile(r"^- (\S+\.md)(?: \[[a-z]+\])?: ", re.MULTILINE)
_MORE = re.compile(r"^- \((\d+) more entries: view_memory lists them\)$", re.MULTILINE)
_MORE_NO_TOOLS = re.compile(r"^- \((\d+) more entries are not shown here\)$", re.MULTILINE)


def standing_line(
    snapshot: Snapshot, max_chars: int = MAX_STANDING_CHARS, *, tools: bool = True
) -> str:
    """The memory block of the system prompt; empty when there is nothing to remember.
    Without `tools` (the request carries none) it names no tool."""
    if not snapshot.entries:
        return ""
    lines: list[str] = []
    used = 0
    left = 0
    for item in snapshot.entries:
        entry = item.entry
        tag = "" if entry.kind == "fact" else f" [{entry.kind}]"
        # A file written by hand or by an older Brim may hold control characters: they
        # never reach the prompt.
        line = f"- {entry.canonical}{tag}: {' '.join(strip_controls(entry.first_line).split())}"
        if entry.kind == "fact" and entry.fields.quotes:
            quote = " ".join(strip_controls(entry.fields.quotes[0]).split())
            if len(quote) > 200:
                quote = quote[:199] + "…"
            line += f' (user: "{quote}")'
        if used + len(line) > max_chars:
            left += 1
            continue
        lines.append(line)
        used += len(line) + 1
    if left:
        lines.append((MORE_ENTRIES if tools else MORE_ENTRIES_NO_TOOLS).format(left))
    intro = STANDING_INTRO if tools else STANDING_INTRO_NO_TOOLS
    return "\n".join([STANDING_HEADER, intro, *lines])


def standing_for(block: str, *, tools: bool) -> str:
    """A standing line (either wording, as `standing_block` finds it) worded for whether
    the request carries tools: the same entries, Brim's own two sentences swapped."""
    if not block:
        return block
    with_tools, without = (
        STANDING_HEADER + "\n" + STANDING_INTRO,
        STANDING_HEADER + "\n" + STANDING_INTRO_NO_TOOLS,
    )
    if tools:
        block = block.replace(without, with_tools, 1)
        return _MORE_NO_TOOLS.sub(lambda m: MORE_ENTRIES.format(m.group(1)), block)
    block = block.replace(with_tools, without, 1)
    return _MORE.sub(lambda m: MORE_ENTRIES_NO_TOOLS.format(m.group(1)), block)


def standing_block(system_text: str) -> str:
    """The standing line inside a system message ("" when it has none), in either wording."""
    starts = [
        system_text.find(STANDING_HEADER + "\n" + intro)
        for intro in (STANDING_INTRO, STANDING_INTRO_NO_TOOLS)
    ]
    found = [s for s in starts if s >= 0]
    if not found:
        return ""
    block = system_text[min(found) :]
    end = block.find("\n\n")
    return block[:end] if end >= 0 else block


def standing_paths(system_text: str) -> list[str]:
    """The entries a system message's standing line lists."""
    return _STANDING_ITEM.findall(standing_block(system_text))


class MemoryObserver:
    """One session's view of memory per run: the snapshot, exposures and tickets."""

    def __init__(
        self,
        service: MemoryService,
        scopes: list[Scope],
        *,
        conversation: Callable[[], str],
        writes: bool,
    ) -> None:
        self.service = service
        self.scopes = scopes
        self.writes = writes  # False: read-only run (ephemeral): no IDs, no receipts
        self._conversation = conversation
        self.snapshot = Snapshot()
        self._views: dict[str, tuple[str, ...]] = {}
        self._content_hashes: dict[str, str] = {}  # Message.content_hash -> content hash
        self.runs = 0

    def begin_run(self) -> Snapshot:
        """Snapshot every file of the scopes, once for this run."""
        self.snapshot = self.service.store.snapshot(self.scopes, assign_ids=self.writes)
        self.runs += 1
        return self.snapshot

    def register_view(self, text: str, paths: tuple[str, ...]) -> None:
        self._views[content_hash(text)] = paths

    def _hash_of(self, message: Message) -> str:
        key = message.content_hash  # cached on the message: each content is hashed once
        found = self._content_hashes.get(key)
        if found is None:
            found = content_hash(message.content)
            self._content_hashes[key] = found
        return found

    def exposures(self, messages: list[Message]) -> dict[str, str]:
        """canonical path -> how it reached the request: "standing", "view" or both
        ("standing,view")."""
        found: dict[str, set[str]] = {}
        for message in messages:
            if message.role == "system":
                for path in standing_paths(message.content):
                    found.setdefault(path, set()).add("standing")
            elif message.role == "tool" and message.name == VIEW_NAME and self._views:
                for path in self._views.get(self._hash_of(message), ()):
                    found.setdefault(path, set()).add("view")
        return {path: ",".join(sorted(how)) for path, how in found.items()}

    def tickets_for(self, messages: list[Message]) -> list[Ticket]:
        if not self.writes:
            return []
        exposed = self.exposures(messages)
        if not exposed:
            return []
        digest = hashlib.blake2b(digest_size=12)
        for message in messages:
            digest.update(message.content_hash.encode())
        request = digest.hexdigest()
        tickets: list[Ticket] = []
        for path, how in sorted(exposed.items()):
            item = self.snapshot.get(path)
            if item is None or not item.id:
                continue
            tickets.append(
                Ticket(
                    ticket=uuid.uuid4().hex[:16],
                    entry_id=item.id,
                    path=path,
                    scope=item.entry.scope.key,
                    epoch=item.epoch,
                    hash=item.hash,
                    exposure=how,
                    conversation=self._conversation(),
                    request=request,
                )
            )
        return tickets

    def wrap(self, provider: Provider) -> Provider:
        return ObservingProvider(provider, self)


class ObservingProvider(Provider):
    """The session's provider with receipts written beside each chat request."""

    def __init__(self, inner: Provider, observer: MemoryObserver) -> None:
        super().__init__(inner.base_url or None)
        self.inner = inner
        self.kind = inner.kind
        self.cuts_prompts_silently = inner.cuts_prompts_silently
        self.observer = observer

    async def list_models(self) -> list[ModelInfo]:
        return await self.inner.list_models()

    async def report(self, model: str) -> EngineReport:
        return await self.inner.report(model)

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        return await self.inner.count_prompt(model, messages, tools)

    def segment_tokenizer(self, model: str) -> SegmentTokenizer | None:
        return self.inner.segment_tokenizer(model)

    async def loaded_model(self, model: str) -> LoadedModel | None:
        # Forwarded: without it an agent with memory never learned Ollama's loaded window.
        return await self.inner.loaded_model(model)

    async def load_model(self, model: str) -> bool:
        return await self.inner.load_model(model)

    async def ready(self) -> bool:
        return await self.inner.ready()

    async def gpu_spill(self, model: str) -> EngineNotice | None:
        return await self.inner.gpu_spill(model)

    def set_pin(self, num_ctx: int) -> bool:
        return self.inner.set_pin(num_ctx)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def warm(self, model: str, messages: list[Message], options: ChatOptions) -> None:
        # The engine's own pre-warm, no receipt: nothing is answered, no memory is shown.
        await self.inner.warm(model, messages, options)

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        receipts = self.observer.service.receipts
        try:
            tickets = self.observer.tickets_for(messages)
        except Exception:
            log.warning("memory: could not identify the request's memory", exc_info=True)
            tickets = []
        writer: asyncio.Future[list[Ticket]] | None = None
        if tickets:
            writer = asyncio.ensure_future(asyncio.to_thread(receipts.write_pending, tickets))
        done: StreamDone | None = None
        try:
            async for item in self.inner.stream_chat(model, messages, options):
                if isinstance(item, StreamDone):
                    done = item
                yield item
        except BaseException:
            if writer is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.shield(writer)
            raise
        if writer is None:
            return
        try:
            written = await writer
            if done is not None and written:
                await asyncio.to_thread(
                    receipts.complete, written, prompt_tokens=done.usage.prompt_tokens
                )
        except Exception:
            log.warning("memory: could not write the request's receipts", exc_info=True)
