"""`bench kv_reuse` on a real llama.cpp `llama-server` (the one `make test` installs), with
and without its chunk reuse (`n_cache_reuse`, which Brim sends on every request).

The same scripted turns as the embedded cases, run four times, each on a fresh server with
one slot (`-np 1`: with several, a request may land on a slot whose cache holds none of it;
fresh, so that no run reads another's cache): Brim's session and the sliding window, each
with the reuse Brim asks for and with it off (`n_cache_reuse: 0`, what a client that does
not ask for it gets from a server started without `--cache-reuse`).

The prompt tokens evaluated anew are the server's own figures (`prompt_tokens` minus
`cached_tokens`; cached counts the common prefix and the chunks it shifted).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench._llama_server import running_llama_server
from bench.kv_reuse import (
    MEMORY_PROMPT_HEAD,
    SLIDING_SHARE,
    Case,
    Request,
    Tally,
    common_prefix,
)
from engine.config import default_agent
from engine.context.guided import is_compaction_request
from engine.messages import Message, assistant, system, user
from engine.paths import BrimPaths
from engine.providers.base import ChatOptions, StreamDone, StreamItem, TextDelta
from engine.providers.embedded import default_model_path
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.providers.llamacpp import LlamaCppProvider
from engine.session import ChatSession


class RecordingServerProvider(LlamaCppProvider):
    """llama-server, recording every request that lands as the embedded cases do;
    `reuse=False` sends `n_cache_reuse: 0`, the server's own default."""

    def __init__(self, tally: Tally, *, sliding: bool, reuse: bool, base_url: str) -> None:
        super().__init__(base_url)
        self.tally = tally
        self.sliding = sliding
        self.reuse = reuse
        self.tokenizer = GgufTokenizer(default_model_path())
        self._previous: list[int] = []

    def request_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        body = super().request_body(model, messages, options)
        if not self.reuse:
            body["n_cache_reuse"] = 0
        return body

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        first = messages[0].content if messages and messages[0].role == "system" else ""
        last = messages[-1].content if messages else ""
        kind = "sliding" if self.sliding else "agent"
        if not self.sliding and is_compaction_request(first, last):
            kind = "compaction"
        elif not self.sliding and first.startswith(MEMORY_PROMPT_HEAD):
            kind = "memory"
        # The common prefix by the model's template as Brim's tokenizer renders it (the
        # server's own rendering may differ by a few framing tokens).
        tokens = self.tokenizer.request_tokens(messages, list(options.tools) or None)
        async for item in super().stream_chat(model, messages, options):
            if isinstance(item, StreamDone):
                shared = common_prefix(tokens, self._previous)
                self._previous = tokens
                usage = item.usage
                request = Request(kind, usage.prompt_tokens or 0, usage.cached_tokens or 0, shared)
                self.tally.requests.append(request)
                print(f"request server reuse={self.reuse} {request}", file=sys.stderr, flush=True)
            yield item


async def _ladder(url: str, case: Case, turns: list[str], *, reuse: bool) -> Tally:
    tally = Tally()
    provider = RecordingServerProvider(tally, sliding=False, reuse=reuse, base_url=url)
    agent = default_agent().with_changes(
        provider="llamacpp",
        base_url=url,
        model="",
        num_ctx=case.window,
        max_tokens=case.max_tokens,
    )
    with tempfile.TemporaryDirectory() as home:
        session = ChatSession(
            agent,
            BrimPaths.resolve(Path(home)),
            lambda _e: None,
            provider=provider,
            memory=True,
            reflect_on_close=True,
        )
        started = time.perf_counter()
        await session.start()
        for i, text in enumerate(turns):
            await session.send(text)
            _progress(case, f"server ladder, reuse {reuse}", i, len(turns))
        await session.close()  # the reflection on close is part of the run's cost
        tally.wall_s = time.perf_counter() - started
    return tally


async def _sliding(url: str, case: Case, turns: list[str], *, reuse: bool) -> Tally:
    tally = Tally()
    provider = RecordingServerProvider(tally, sliding=True, reuse=reuse, base_url=url)
    head = system(default_agent().system_prompt)
    history: list[Message] = []
    budget = int(case.window * SLIDING_SHARE)
    started = time.perf_counter()
    try:
        for i, text in enumerate(turns):
            history.append(user(text))
            # Slide: drop the oldest messages until the request fits the budget.
            while len(history) > 1 and provider.tokenizer.count_request([head, *history]) > budget:
                history.pop(0)
            parts: list[str] = []
            options = ChatOptions(max_tokens=case.max_tokens)
            async for item in provider.stream_chat("", [head, *history], options):
                if isinstance(item, TextDelta):
                    parts.append(item.text)
            history.append(assistant("".join(parts)))
            _progress(case, f"server sliding, reuse {reuse}", i, len(turns))
    finally:
        await provider.aclose()
    tally.wall_s = time.perf_counter() - started
    return tally


def run_on_server(case: Case, turns: list[str], *, sliding: bool, reuse: bool) -> Tally:
    """One run on a fresh one-slot llama-server with the case's window."""
    run = _sliding if sliding else _ladder
    with (
        tempfile.TemporaryDirectory() as logs,
        running_llama_server(Path(logs), ctx=case.window, parallel=1) as server,
    ):
        return asyncio.run(run(server.url, case, turns, reuse=reuse))


def _progress(case: Case, variant: str, turn: int, total: int) -> None:
    print(f"{case.window}: {variant}: turn {turn + 1}/{total}", file=sys.stderr, flush=True)
