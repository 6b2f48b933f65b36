"""`brim memory reflect` and `brim memory learn`.

`reflect` is what a chat starts, detached, when it closes a conversation; `learn` is the
foreground pass `/learn` runs. Both resolve the conversation's agent (its file, or the
engine flags given) and run on its summarizer model.

`reflect` runs while the person may still be using the machine: it lowers its own priority
first (`REFLECTION_NICENESS`, inherited by the embedded engine's child it starts), and all
the conversations it is given share one model request and one time limit, counted from its
start (the model's load included); the newest conversation gets the request. memory.log
gets one line per conversation with what it cost.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.cli.agents import agent_from_flags, with_flags
from engine.cli.arguments import add_engine_flags, conversation_id
from engine.cli.errors import CliError
from engine.config import AgentConfig, load_agents
from engine.memory.reflect import (
    REFLECTION_REQUESTS,
    REFLECTION_TIME_LIMIT_S,
    PassReport,
    learn_conversation,
    reflect_conversation,
)
from engine.memory.requests import Meter, provider_complete
from engine.memory.service import MemoryService
from engine.memory.sizing import counting_with
from engine.memory.spawn import read_agent_settings
from engine.messages import user
from engine.paths import BrimPaths
from engine.providers.errors import ProviderError
from engine.session import probe_window, provider_for
from engine.session.engine_calls import usage_recorder
from engine.store import ConversationInfo, Store
from engine.tokens import counter_for

log = logging.getLogger("engine.memory")

REFLECTION_NICENESS = 10


def add_reflect_parsers(msub: Any) -> None:
    for name, text in (
        ("reflect", "suggest memories from a conversation's unreflected messages"),
        ("learn", "reflect, then one curation call over the whole memory"),
    ):
        cmd = msub.add_parser(name, help=text)
        cmd.add_argument(
            "--conversation",
            type=conversation_id,
            required=True,
            action="append",
            help="repeat for several: they share one engine (one model load)",
        )
        cmd.add_argument("--agent")
        cmd.add_argument(
            "--agent-settings",
            type=Path,
            metavar="FILE",
            help="run with the agent whose settings FILE holds as JSON, removed once read "
            "(what a chat hands the reflection it starts)",
        )
        add_engine_flags(cmd)
        cmd.add_argument("--summarizer-model")
        cmd.add_argument("--workspace", type=Path)
        cmd.add_argument("--json", action="store_true")


def cmd_reflect(args: argparse.Namespace, paths: BrimPaths) -> int:
    command = args.memory_command
    # Read first, whatever happens next: the file was written for this process alone.
    given = read_agent_settings(args.agent_settings) if args.agent_settings else None
    try:
        return _with_log_file(paths, lambda: _run(args, paths, command, given))
    except ProviderError as exc:
        # The engine is down or lacks the model: one line, as `brim probe` says it
        print(f"brim memory {command}: {exc.message}", file=sys.stderr)
        return 2 if exc.kind == "unreachable" else 1


def _with_log_file(paths: BrimPaths, run: Callable[[], int]) -> int:
    """A detached reflection has no terminal: what it logs goes to logs/memory.log too."""
    handler: logging.Handler | None = None
    try:
        paths.logs_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(paths.logs_dir / "memory.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    except OSError:
        handler = None
    try:
        return run()
    finally:
        if handler is not None:
            log.removeHandler(handler)
            handler.close()


def _run(
    args: argparse.Namespace, paths: BrimPaths, command: str, given: AgentConfig | None
) -> int:
    if command == "reflect":
        log.info("memory reflect: running at niceness %s", _lower_priority())
    return asyncio.run(_reflect(args, paths, command, given))


def _lower_priority() -> int | str:
    """Lower this process's priority (and so its children's); the niceness it now has."""
    if not hasattr(os, "nice"):
        return "unchanged (no nice on this system)"
    try:
        current = os.nice(0)
        if current < REFLECTION_NICENESS:
            return os.nice(REFLECTION_NICENESS - current)
        return current
    except OSError as exc:
        return f"unchanged ({exc})"


def _conversations(store: Store, ids: list[str]) -> list[ConversationInfo]:
    infos = []
    for one in dict.fromkeys(ids):
        found = store.get_conversation(one)
        if found is None:
            raise CliError(f"no conversation with id {one!r}")
        infos.append(found)
    return infos


def reflection_agent(
    args: argparse.Namespace, paths: BrimPaths, first: ConversationInfo, given: AgentConfig | None
) -> AgentConfig:
    """The agent given in a settings file, else `--agent` or the engine flags, else the
    first conversation's own agent (its file); `--summarizer-model` on top."""
    if given is not None:
        agent = with_flags(given, args)
    else:
        if not args.agent and not args.provider:
            names = {a.name for a in load_agents(paths.agents_dir)[0]}
            args.agent = first.agent if first.agent in names else None
        agent = agent_from_flags(args, paths)
    if args.summarizer_model:
        agent = agent.with_changes(summarizer_model=args.summarizer_model)
    return agent


async def _reflect(
    args: argparse.Namespace, paths: BrimPaths, command: str, given: AgentConfig | None
) -> int:
    deadline = time.monotonic() + REFLECTION_TIME_LIMIT_S
    meter = Meter(limit=REFLECTION_REQUESTS if command == "reflect" else None)
    store = Store.open(paths.ensure().db_path)
    try:
        infos = _conversations(store, args.conversation)
        agent = reflection_agent(args, paths, infos[0], given)
        if command == "reflect":
            infos.reverse()  # the newest conversation first: it gets the model request
        service = MemoryService.for_paths(paths)
        provider = provider_for(agent)
        reports: list[PassReport] = []
        try:
            window = await probe_window(provider, agent)
            counter = counter_for(provider, agent.model)
            model = agent.summarizer_model or agent.model
            for info in infos:
                workspace = args.workspace or (Path(info.workspace) if info.workspace else None)
                common: dict[str, Any] = dict(
                    service=service,
                    scopes=service.scopes(info.agent or agent.name, workspace),
                    # Each request's usage lands in the conversation's /usage as memory's.
                    complete=provider_complete(
                        provider,
                        model,
                        usage_recorder(
                            lambda: store,
                            lambda: provider,
                            functools.partial(str, info.id),
                            agent=info.agent or agent.name,
                            purpose="memory",
                        ),
                    ),
                    count_text=lambda text: counter.count_message(user(text)),
                    window=window.window,
                    count_request=counting_with(counter),
                )
                started = time.monotonic()
                if command == "learn":
                    report = await learn_conversation(store.records(info.id), info.id, **common)
                else:
                    report = await reflect_conversation(
                        store.records(info.id),
                        info.id,
                        meter=meter,
                        time_limit_s=deadline - time.monotonic(),
                        **common,
                    )
                reports.append(report)
                log.info(
                    "memory %s %s: claimed %d messages (%d..%d], scanned %d, skipped %d "
                    "chunks, queued %s; %d model requests, %d prompt tokens counted, "
                    "%.1f s on the model, %.1f s in all%s",
                    command,
                    info.id,
                    report.claimed,
                    report.previous,
                    report.through,
                    report.scanned,
                    report.skipped_chunks,
                    report.queued,
                    report.requests,
                    report.prompt_tokens,
                    report.seconds,
                    time.monotonic() - started,
                    " (stopped at the time limit)" if report.timed_out else "",
                )
            if command == "reflect":
                log.info("memory reflect: %s", meter.describe())
        finally:
            await provider.aclose()
    finally:
        store.close()
    for report in reports:
        if args.json:
            print(json.dumps(report.to_dict()))
        elif report.nothing_new and command == "reflect":
            print("Nothing new to reflect on.")
        else:
            print(f"{len(report.queued)} suggestions queued for review.")
    return 0
