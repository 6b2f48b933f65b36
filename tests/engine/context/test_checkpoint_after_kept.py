"""On an engine that reuses kept parts of its cache where they now stand (llama-server's
chunk reuse), a compaction lays its checkpoint after the kept messages, just before the
current request: the first request after it then evaluates the checkpoint and the request,
not the kept messages again. Tokens by the bundled model's own vocabulary and template;
the server's reuse as its source reads (tests/helpers/chunk_reuse.py)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from engine.context.compaction import CompactionResult, compact
from engine.context.model_face import OPENING, OPENING_AFTER
from engine.context.replay import Replay
from engine.messages import Message, alternating, assistant, system, user
from engine.providers.embedded import default_model_path
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.providers.llamacpp import CACHE_REUSE_CHUNK
from tests.helpers.chunk_reuse import reused_tokens

from .histories import FakeSummarizer, count, pinned

WINDOW = 4096


@pytest.fixture(scope="module")
def tokenizer() -> GgufTokenizer:
    path = default_model_path()
    assert path is not None
    return GgufTokenizer(path)


def _turn(i: int) -> str:
    return (
        f"Step {i}: the service on port {8000 + i} restarted after job batch-{i} wrote "
        f"{i * 37} records to /srv/data/part-{i}.csv, and worker-{i % 4} logged a queue "
        f"depth of {i + 3} with {i * 11 + 40} ms per shard. Acknowledge briefly."
    )


def _conversation(head: list[Message]) -> tuple[list[Message], Replay]:
    """Thirty turns; the last request carried the 29th, its answer and the 30th came after."""
    history = list(head)
    for i in range(29):
        history += [user(_turn(i)), assistant(f"Noted: port {8000 + i}, batch-{i}.")]
    sent = tuple(alternating(history[:-1]))
    history.append(user(_turn(29)))
    replay = Replay(sent, (), sum(map(count, sent)), at=history[-2].created)
    return history, replay


def _compacted(history: list[Message], replay: Replay, *, after_kept: bool):
    fake = FakeSummarizer()
    result: CompactionResult = asyncio.run(
        compact(history, window=WINDOW, count_message=count, summarize=fake, replay=replay,
                checkpoint_after_kept=after_kept)
    )  # fmt: skip
    assert result.ok
    return result, fake.requests[-1]


def test_the_first_request_after_a_compaction_reuses_the_kept_messages_ahead_of_the_checkpoint(
    tokenizer: GgufTokenizer,
):
    history, replay = _conversation([system("You are Brim.")])
    result, last = _compacted(history, replay, after_kept=True)
    rebuilt = result.messages
    at = next(i for i, m in enumerate(rebuilt) if m.kind == "summary")
    assert rebuilt[-1] is history[-1] and rebuilt[at + 2] is history[-1]
    # What the slot holds after the compaction: its last request (the answer follows it).
    cache = tokenizer.request_tokens(list(last.messages))
    prompt = tokenizer.request_tokens(alternating(rebuilt))
    kept = tokenizer.request_tokens(alternating(rebuilt[:at]))
    alone = tokenizer.request_tokens(alternating(rebuilt[:1]))
    assert len(kept) - len(alone) > 400, "too little kept ahead of the request to tell"
    reused = reused_tokens(cache, prompt, CACHE_REUSE_CHUNK)
    # Every kept message, the previous answer among them, comes from the cache (less the
    # generation prompt that closes `kept`); what is evaluated is the checkpoint and the
    # request.
    assert reused >= len(kept) - 8, (reused, len(kept), len(prompt))
    assert len(prompt) - reused <= len(prompt) - len(kept) + 8


def test_laid_ahead_of_the_kept_messages_the_checkpoint_ends_the_servers_matching(
    tokenizer: GgufTokenizer,
):
    """Why the layout differs by engine: with the checkpoint first, only the system prompt
    comes from the cache, and a prefix cache (every other engine) reuses no more either way."""
    history, replay = _conversation([system("You are Brim.")])
    result, last = _compacted(history, replay, after_kept=False)
    cache = tokenizer.request_tokens(list(last.messages))
    prompt = tokenizer.request_tokens(alternating(result.messages))
    alone = tokenizer.request_tokens(alternating(result.messages[:1]))
    assert reused_tokens(cache, prompt, CACHE_REUSE_CHUNK) <= len(alone)


def test_the_checkpoint_after_the_kept_messages_is_a_user_turn_joined_with_the_request():
    """The system message keeps the prompt alone (a changed checkpoint would otherwise change
    the whole prefix); the fixed head stays first; strict templates get one user turn."""
    head = [system("You are Brim."), pinned()]
    history, replay = _conversation(head)
    result, _ = _compacted(history, replay, after_kept=True)
    rebuilt = result.messages
    at = next(i for i, m in enumerate(rebuilt) if m.kind == "summary")
    assert rebuilt[:2] == head and at > 2
    assert rebuilt[at - 1].role == "assistant"
    wire = alternating(rebuilt)
    assert wire[0].content == "You are Brim."
    last = wire[-1]
    assert last.role == "user"
    assert last.content.startswith(OPENING_AFTER)
    assert last.content.endswith(history[-1].content)
    assert all(w.role != u.role for w, u in itertools.pairwise(wire[1:]))


def test_on_every_other_engine_the_checkpoint_still_leads_inside_the_system_message():
    history, replay = _conversation([system("You are Brim.")])
    result, _ = _compacted(history, replay, after_kept=False)
    assert result.messages[1].kind == "summary"
    wire = alternating(result.messages)
    assert wire[0].content.startswith("You are Brim.\n\n" + OPENING)
    assert OPENING_AFTER not in "".join(m.content for m in wire)
