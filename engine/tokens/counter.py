"""The token counter: one model's requests counted exactly, by tiktoken, or by a learned
ratio, each message measured once and cached by its content hash."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
from collections import deque
from collections.abc import Iterable
from itertools import islice
from typing import Any, Literal

import tiktoken

from engine.messages import Message
from engine.providers.base import Provider, SegmentTokenizer
from engine.providers.engine_segments import EngineSegments, tools_key
from engine.providers.errors import ProviderError
from engine.tokens.calibration import (
    MESSAGE_OVERHEAD,
    MIN_CHARS_TO_LEARN_RATIO,
    MIN_CHARS_TO_LEARN_SCALE,
    MIN_UNITS_TO_LEARN_SCALE,
    O200K_SCALE_BOUNDS,
    RATIO_BOUNDS,
    SCALE_SAMPLES,
    SEED_REQUEST_OVERHEAD,
    RequestOverhead,
    clamp_ratio,
    family_ratio,
    heuristic_framing,
    message_text,
    smooth,
)
from engine.tokens.encodings import load_encoding, openai_encoding_name
from engine.tokens.framing import ToolFraming
from engine.tokens.text_segments import TextSegments

log = logging.getLogger(__name__)

Strategy = Literal["exact", "tiktoken", "heuristic"]

# After this many counts in a row the engine could not make, Brim stops asking it.
ENGINE_FAILURES_TO_GIVE_UP = 3
# Messages counted through the engine at once (a resumed conversation counts them all).
PRIME_CONCURRENCY = 8


class TokenCounter:
    """Counts one model's requests. Hold one per model: calibration is per model. Not
    thread-safe; the agent loop that owns it is its only caller."""

    def __init__(
        self,
        model: str = "",
        *,
        tokenizer: SegmentTokenizer | None = None,
        engine: EngineSegments | TextSegments | None = None,
        encoding: str | None = None,
        cache_limit: int = 100_000,
        source: str = "",
        note: str = "",
    ) -> None:
        """`tokenizer` (in process) or `engine` (through its endpoints) makes counts exact;
        otherwise `encoding` (or an OpenAI-family model name) selects tiktoken; otherwise the
        family ratio is used. `source` says how an exact count is made, `note` why an
        estimate is one (both for `/context`)."""
        self.model = model
        self._tokenizer = tokenizer
        self._engine = engine if tokenizer is None else None
        # The engine counts each message's text, not its chat framing (SGLang).
        self._text_only = bool(getattr(self._engine, "text_only", False))
        self._encoding: tiktoken.Encoding | None = None
        self.encoding_name: str | None = None
        self.source = source
        self.note = note
        self._exact: dict[str, int] = {}  # content hash -> the engine's count of the message
        self._tools_exact: dict[str, int] = {}  # schema-list hash -> the engine's count
        self._engine_overhead: int | None = None
        self._o200k_cache: dict[str, int] = {}  # content hash -> o200k tokens
        self._o200k: tiktoken.Encoding | None = None  # loaded on first need
        self._o200k_scale = 1.0  # engine tokens per o200k token
        self._samples: deque[tuple[str, int]] = deque(maxlen=SCALE_SAMPLES)
        self._engine_failed: str | None = None  # why Brim stopped asking the engine
        self._engine_misses = 0
        if tokenizer is not None:
            self.strategy: Strategy = "exact"
            seed = 0.0  # the tokenizer reports its own framing; only a residual is learned
        elif self._engine is not None:
            self.strategy = "exact"
            seed = 0.0
        else:
            self.encoding_name = encoding or openai_encoding_name(model)
            if self.encoding_name is not None:
                self.strategy = "tiktoken"
                self._encoding = load_encoding(self.encoding_name)
            else:
                self.strategy = "heuristic"
            seed = float(SEED_REQUEST_OVERHEAD)
        self._ratio = family_ratio(model)
        self._overhead = RequestOverhead(seed, seed)
        self._tool_framing = ToolFraming()  # estimated counts: learned from the reports
        self.observations = 0
        self._units: dict[str, int] = {}  # content hash -> tokens (chars for the heuristic)
        self._tool_units: dict[str, int] = {}  # schema hash -> tokens (chars)
        self._cache_limit = max(16, cache_limit)
        self.measured = 0  # messages actually tokenized (cache misses), for tests and benches

    # -- what the counter knows -----------------------------------------------------------

    @property
    def estimate_is_exact(self) -> bool:
        """True when counts come from the engine's own tokenizer and template."""
        return self.strategy == "exact" and self._engine_failed is None and not self._text_only

    @property
    def counts_through_engine(self) -> bool:
        """True when exact counts need `prime` (they come from the engine over HTTP)."""
        return self._engine is not None and self._engine_failed is None

    def describe(self) -> str:
        """Whether the count is exact or estimated, and how or why: `/context` says it."""
        if self.estimate_is_exact:
            return f"exact: {self.source or 'the engine' + chr(39) + 's own tokenizer'}"
        if self._text_only and self._engine_failed is None:
            return (
                f"exact text: {self.source}; the chat template's framing is learned from "
                "each answer's prompt tokens"
            )
        why = self._engine_failed or self.note or "this engine cannot count tokens for Brim"
        if self._engine is not None:
            how = "o200k tokens scaled to this engine's own counts"
        elif self.strategy == "tiktoken":
            how = f"{self.encoding_name}, the model's own encoding, for the text"
        else:
            how = f"characters ÷ {self._ratio:.2f}, learned from each answer's prompt tokens"
        return f"estimated ({how}): {why}"

    @property
    def ratio(self) -> float | None:
        """The learned chars-per-token ratio (heuristic strategy only)."""
        return self._ratio if self.strategy == "heuristic" else None

    def _base_overhead(self, has_tools: bool) -> int:
        if self._tokenizer is not None:
            return self._tokenizer.request_overhead(has_tools)
        return self._engine_overhead or 0

    def request_overhead(self, has_tools: bool) -> int:
        """Tokens a request costs beyond its messages and tool schemas."""
        return round(self._base_overhead(has_tools) + self._overhead.get(has_tools))

    # -- counting ---------------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        """Tokens of a bare text (not cached): for sizing a tool result before it is a message."""
        if self._tokenizer is not None:
            return self._tokenizer.count_text(text)
        if self._engine is not None:
            return math.ceil(len(self._o200k_encoding().encode_ordinary(text)) * self._o200k_scale)
        if self._encoding is not None:
            return len(self._encoding.encode_ordinary(text))
        return math.ceil(len(text) / self._ratio)

    def count_message(self, message: Message) -> int:
        """One message's tokens with its framing; measured once per distinct content."""
        if message.is_notice:
            return 0
        units = self._message_units(message)
        if self._tokenizer is not None:
            return units
        if self._engine is not None:
            exact = self._exact.get(message.content_hash)
            if exact is not None:
                return exact
            return self._estimate(message) + heuristic_framing(message)
        if self._encoding is not None:
            return units + self._tool_framing.framing(message)
        return math.ceil(units / self._ratio) + self._tool_framing.framing(message)

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tools: list[dict[str, Any]]) -> int:
        """Tokens of the tool schemas a request carries, each schema measured once."""
        if not tools:
            return 0
        if self._engine is not None:
            exact = self._tools_exact.get(tools_key(tools))
            if exact is not None:
                return exact
            text = json.dumps(tools, ensure_ascii=False, sort_keys=True)
            return self.count_text(text)
        tokenizer_tools = getattr(self._tokenizer, "count_tools", None)
        if tokenizer_tools is not None:
            # The template renders the list as one block with its own preamble: count it whole.
            key = tools_key(tools)
            if key not in self._tool_units:
                self._store(self._tool_units, key, tokenizer_tools(tools))
            return self._tool_units[key]
        total = 0
        for tool in tools:
            units = self._schema_units(tool)
            total += units if self.strategy != "heuristic" else math.ceil(units / self._ratio)
        return total

    def counted_exactly(self, tools: list[dict[str, Any]]) -> bool:
        """Whether `count_tools(tools)` is the engine's own count now, not an estimate (an
        engine that counts over HTTP and was not reached leaves it estimated)."""
        if self._engine is not None:
            return self.estimate_is_exact and tools_key(tools) in self._tools_exact
        return self.estimate_is_exact

    def count_request(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """The prompt tokens this request will cost: messages + tool schemas + framing."""
        total = self.count_messages(messages) + self.count_tools(tools)
        return max(0, total + self.request_overhead(bool(tools)))

    # -- learning from the engine -----------------------------------------------------------

    def calibrate(
        self,
        sent_messages: list[Message],
        tools: list[dict[str, Any]],
        reported_prompt_tokens: int | None,
    ) -> None:
        """Learn from the prompt tokens the engine reported for exactly what was sent.

        Do not call this for a response flagged by `detect_silent_truncation`: the engine
        counted less than was sent, and learning from it would make every later estimate low.
        """
        if reported_prompt_tokens is None or reported_prompt_tokens <= 0:
            return
        messages = [m for m in sent_messages if not m.is_notice]
        if not messages:
            return
        has_tools = bool(tools)
        reported = float(reported_prompt_tokens)
        if self._tokenizer is None and self._engine is None:
            # Estimated: what the template spends on tool calls and results is learned first,
            # so the ratio and the overhead learn only what is left.
            self._tool_framing.learn(
                messages, tools_key(tools) if tools else "", reported, self._text_tokens
            )
        tool_tokens = self.count_tools(tools)
        if self.strategy == "heuristic":
            gap = self._learn_ratio(messages, tools, has_tools, reported)
        elif self._engine is not None and self._engine_failed is not None:
            gap = self._learn_scale_from(messages, tools, has_tools, reported)
        else:
            base = self._base_overhead(has_tools)
            gap = reported - self.count_messages(messages) - tool_tokens - base
        self._overhead.learn(has_tools, gap)
        self.observations += 1

    def _text_tokens(self, message: Message) -> float:
        """The estimate of a message's text alone (no framing), at what is known now."""
        units = self._message_units(message)
        return float(units) if self._encoding is not None else units / self._ratio

    def _learn_ratio(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        has_tools: bool,
        reported: float,
    ) -> float:
        """Learn the ratio from the text's share of the report, and return the request overhead
        gap to learn from: what the text, at the ratio this request shows, cannot explain.

        The text is the messages' and the tool schemas': both are tokenized alike, and on a
        first request the schemas are most of it (a dozen tools against a short prompt), so
        an error in their estimate, taken as known, would all land on the ratio of the few
        characters left (to its clamp) and undercount every tool result that follows.

        One report cannot tell a larger overhead from a denser text, so the ratio, which scales
        with the conversation, takes it all while it can; the overhead only learns what is
        left once the observed ratio hits its clamp (CJK text, a huge tool preamble)."""
        chars = sum(self._message_units(m) for m in messages)
        chars += sum(self._schema_units(t) for t in tools)
        framing = sum(self._tool_framing.framing(m) for m in messages)
        if chars < MIN_CHARS_TO_LEARN_RATIO:
            # A few characters measure the framing, not the text: only the overhead learns.
            return reported - chars / self._ratio - framing
        text_tokens = reported - framing - self._overhead.get(has_tools)
        observed = clamp_ratio(chars / text_tokens) if text_tokens >= 1 else RATIO_BOUNDS[1]
        self._ratio = clamp_ratio(smooth(self._ratio, observed))
        return reported - chars / observed - framing

    # -- counting through the engine ------------------------------------------------------

    async def prime(
        self,
        messages: Iterable[Message],
        tools: list[dict[str, Any]],
        *,
        within: int | None = None,
    ) -> None:
        """Have the engine count what it has not counted yet: each new message once (cached
        by content), the tool schemas once, the framing once. A no-op for counters that count
        in process. When the engine cannot count, the message stays estimated; after a few
        failures in a row Brim stops asking, and `describe` says why.

        `within`: when the messages hold more tokens than that by estimate, none is counted
        through the engine: they could never be sent in one request, and their estimate is
        all the ladder needs to see that they must shrink (what it then sends is counted, in
        the next `prime`). A resumed conversation of 20,000 messages costs what is sent, not
        the whole history."""
        engine = self._engine
        if engine is None or self._engine_failed is not None:
            return
        if within is not None:
            messages = list(messages)
            if self._over(messages, within):
                messages = []
        try:
            if self._engine_overhead is None:
                overhead = await engine.request_overhead()
                if overhead is None:
                    self._give_up(self.note or f"{engine.engine} did not answer")
                    return
                self._engine_overhead = overhead
            pending = list(
                {
                    m.content_hash: m
                    for m in messages
                    if not m.is_notice and m.content_hash not in self._exact
                }.values()
            )
            if pending:
                # The first warms the engine's prefix counts; the rest (a resumed conversation
                # has many) are asked together, a few at a time.
                first = await engine.count_message(pending[0])
                gate = asyncio.Semaphore(PRIME_CONCURRENCY)

                async def count(message: Message) -> int | None:
                    async with gate:
                        return await engine.count_message(message)

                rest = await asyncio.gather(*(count(m) for m in pending[1:]))
                for message, tokens in zip(pending, [first, *rest], strict=True):
                    if tokens is None:
                        self._missed()
                        if self._engine_failed is not None:
                            return
                        continue
                    self._engine_misses = 0
                    self._learn_scale(message, tokens)
                    self._store(self._exact, message.content_hash, tokens)
            key = tools_key(tools) if tools else ""
            if tools and key not in self._tools_exact:
                tokens = await engine.count_tools(tools)
                if tokens is not None:
                    self._store(self._tools_exact, key, tokens)
        except ProviderError as exc:
            # The engine is down or refused: this request is estimated; the next one asks
            # again (the chat request itself will say what is wrong).
            log.info("counting through %s failed: %s", engine.engine, exc)

    def _missed(self) -> None:
        self._engine_misses += 1
        if self._engine_misses >= ENGINE_FAILURES_TO_GIVE_UP:
            self._give_up(self.note or "the engine stopped counting")

    def _give_up(self, why: str) -> None:
        self._engine_failed = why

    def _learn_scale_from(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        has_tools: bool,
        reported: float,
    ) -> float:
        """The engine stopped counting: learn tokens per character from the reported total
        instead (as the heuristic learns its ratio), and return the framing gap left over."""
        encoding = self._o200k_encoding()
        units = sum(self._o200k_units(m) for m in messages)
        units += (
            len(encoding.encode_ordinary(json.dumps(tools, ensure_ascii=False))) if tools else 0
        )
        framing = sum(heuristic_framing(m) for m in messages)
        text_tokens = reported - framing - self._overhead.get(has_tools)
        if units >= MIN_UNITS_TO_LEARN_SCALE and text_tokens >= 1:
            low, high = O200K_SCALE_BOUNDS
            scale = smooth(self._o200k_scale, text_tokens / units)
            self._o200k_scale = min(high, max(low, scale))
        return reported - self.count_messages(messages) - self.count_tools(tools)

    def _o200k_units(self, message: Message) -> int:
        key = message.content_hash
        units = self._o200k_cache.get(key)
        if units is None:
            encoding = self._o200k_encoding()
            units = sum(len(encoding.encode_ordinary(p)) for p in message_text(message) if p)
            self._store(self._o200k_cache, key, units)
        return units

    def _over(self, messages: list[Message], within: int) -> bool:
        total = 0
        for message in messages:
            total += self.count_message(message)
            if total > within:
                return True
        return False

    def _estimate(self, message: Message) -> int:
        """A message the engine has not counted yet (a checkpoint the ladder just wrote, the
        system prompt before the first request): o200k scaled to the engine once o200k is
        loaded (sizing a tool result loads it), the family ratio until then, so a start
        without tools does not spend a second loading a vocabulary it may never need."""
        if self._o200k is None:
            return math.ceil(self._message_units(message) / self._ratio)
        return math.ceil(self._o200k_units(message) * self._o200k_scale)

    def _learn_scale(self, message: Message, exact: int) -> None:
        if self._message_units(message) < MIN_CHARS_TO_LEARN_SCALE:
            return
        tokens = max(0, exact - MESSAGE_OVERHEAD)
        text = "".join(message_text(message))
        if self._o200k is None:
            self._samples.append((text, tokens))
        else:
            o200k = len(self._o200k.encode_ordinary(text))
            if o200k:
                low, high = O200K_SCALE_BOUNDS
                scale = smooth(self._o200k_scale, tokens / o200k)
                self._o200k_scale = min(high, max(low, scale))

    def _o200k_encoding(self) -> tiktoken.Encoding:
        """o200k, loaded on first need, its scale to this engine learned from the sample of
        exact counts kept until then."""
        if self._o200k is None:
            self._o200k = load_encoding("o200k_base")
            counted = sum(tokens for _, tokens in self._samples)
            o200k = sum(len(self._o200k.encode_ordinary(text)) for text, _ in self._samples)
            if counted and o200k:
                low, high = O200K_SCALE_BOUNDS
                self._o200k_scale = min(high, max(low, counted / o200k))
            self._samples.clear()
        return self._o200k

    # -- the caches -------------------------------------------------------------------------

    def _message_units(self, message: Message) -> int:
        key = message.content_hash
        units = self._units.get(key)
        if units is None:
            units = self._measure(message)
            self.measured += 1
            self._store(self._units, key, units)
        return units

    def _measure(self, message: Message) -> int:
        if self._tokenizer is not None:
            return self._tokenizer.count_message(message)
        parts = message_text(message)
        if self._encoding is not None:
            return sum(len(self._encoding.encode_ordinary(p)) for p in parts if p)
        return sum(len(p) for p in parts)

    def _schema_units(self, tool: dict[str, Any]) -> int:
        text = json.dumps(tool, ensure_ascii=False, sort_keys=True)
        key = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        units = self._tool_units.get(key)
        if units is None:
            tokenizer_tools = getattr(self._tokenizer, "count_tools", None)
            if tokenizer_tools is not None:
                # The engine's template decides whether (and how) schemas are rendered.
                units = tokenizer_tools([tool])
            elif self._tokenizer is not None:
                units = self._tokenizer.count_text(text)
            elif self._encoding is not None:
                units = len(self._encoding.encode_ordinary(text))
            else:
                units = len(text)
            self._store(self._tool_units, key, units)
        return units

    def _store(self, cache: dict[str, int], key: str, units: int) -> None:
        if len(cache) >= self._cache_limit:
            # Drop the oldest half; a long-lived message evicted here is simply measured again.
            for old in list(islice(cache, len(cache) // 2)):
                del cache[old]
        cache[key] = units


def counter_for(provider: Provider, model: str) -> TokenCounter:
    """The best counter for one model on one engine: exact where Brim can open the model's
    vocabulary or the engine counts through its own endpoints, otherwise tiktoken or the
    calibrated ratio, chosen from the model's name."""
    tokenizer = provider.segment_tokenizer(model)
    if tokenizer is not None:
        return TokenCounter(model, tokenizer=tokenizer, source=provider.counting_source(model))
    engine = provider.engine_segments(model)
    note = provider.counting_note(model)
    if engine is not None:
        return TokenCounter(model, engine=engine, source=engine.engine, note=note)
    texts = provider.counts_texts(model)
    if texts:

        async def count_texts(items: list[str]) -> list[int] | None:
            return await provider.count_texts(model, items)

        return TokenCounter(model, engine=TextSegments(count_texts, texts), source=texts, note=note)
    return TokenCounter(model, note=note)
