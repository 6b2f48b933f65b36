"""`brim memory …`: list, review, accept, reject, forget, explain, reflect, learn.

`reflect` is what a chat starts, detached, when it closes a conversation; `learn` is the
foreground pass `/learn` runs. Both resolve the conversation's agent (its file, or the
engine flags given) and run on its summarizer model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.paths import BrimPaths

if TYPE_CHECKING:
    from engine.memory.layout import Scope
    from engine.memory.service import MemoryService

EngineFlags = Callable[[argparse.ArgumentParser], None]


def _page_size(value: str) -> int:
    """0 used to mean the default and a negative size reviewed nothing, silently."""
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {value!r}") from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {size}")
    return size


def add_memory_parser(
    sub: Any, engine_flags: EngineFlags, data_dir_flag: EngineFlags | None = None
) -> None:
    memory = sub.add_parser("memory", help="review and manage memory")
    msub = memory.add_subparsers(dest="memory_command", required=True)
    _add_memory_commands(msub, engine_flags)
    if data_dir_flag is not None:
        for command in msub.choices.values():
            data_dir_flag(command)


def _add_memory_commands(msub: Any, engine_flags: EngineFlags) -> None:
    from engine.cli import conversation_id

    listing = msub.add_parser("list", help="the suggestions waiting for review")
    listing.add_argument("--entries", action="store_true", help="list memory entries instead")
    listing.add_argument("--json", action="store_true")

    review = msub.add_parser("review", help="accept or reject waiting suggestions, page by page")
    review.add_argument("--page-size", type=_page_size, default=None)

    for name, text in (("accept", "write suggestions to memory"), ("reject", "drop suggestions")):
        cmd = msub.add_parser(name, help=text)
        cmd.add_argument("ids", nargs="+", metavar="ID")
        cmd.add_argument("--json", action="store_true")

    forget = msub.add_parser("forget", help="delete an entry; its quoted sentences stay revoked")
    forget.add_argument("path")

    explain = msub.add_parser("explain", help="the five most recent receipts of an entry")
    explain.add_argument("path")
    explain.add_argument("--json", action="store_true")

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
        engine_flags(cmd)
        cmd.add_argument("--summarizer-model")
        cmd.add_argument("--workspace", type=Path)
        cmd.add_argument("--json", action="store_true")


def cmd_memory(args: argparse.Namespace, paths: BrimPaths) -> int:
    from engine.memory.service import MemoryService

    service = MemoryService.for_paths(paths)
    command = args.memory_command
    if command == "list":
        return _list(service, args)
    if command == "review":
        from engine.memory.review import REVIEW_PAGE_SIZE, run_review

        result = run_review(service, page_size=args.page_size or REVIEW_PAGE_SIZE)
        return 1 if result.failed else 0
    if command in ("accept", "reject"):
        decisions = service.accept(args.ids) if command == "accept" else service.reject(args.ids)
        if args.json:
            print(json.dumps([d.__dict__ for d in decisions]))
        else:
            for d in decisions:
                if d.ok:
                    print(f"{command}ed {d.id}" + (f" -> {d.path}" if d.path else ""))
                else:
                    print(f"{d.id}: not {command}ed: {d.message}", file=sys.stderr)
        return 0 if all(d.ok for d in decisions) else 1
    if command == "forget":
        from engine.memory.errors import MemoryStoreError

        try:
            gone = service.forget(args.path)
        except MemoryStoreError as exc:
            print(f"brim: {exc}", file=sys.stderr)
            return 1
        print(f"forgot {gone}")
        return 0
    if command == "explain":
        return _explain(service, args)
    if command in ("reflect", "learn"):
        from engine.providers.errors import ProviderError

        try:
            return _with_log_file(paths, lambda: asyncio.run(_reflect(args, paths, command)))
        except ProviderError as exc:
            # The engine is down or lacks the model: one line, as `brim probe` says it
            print(f"brim memory {command}: {exc.message}", file=sys.stderr)
            return 2 if exc.kind == "unreachable" else 1
    return 64


def _list(service: MemoryService, args: argparse.Namespace) -> int:
    """The queue or the entries; text from older or hand-edited files shows its control
    characters (␛, <U+202E>) instead of sending them to the terminal."""
    from engine.memory.plaintext import safe_json, visible

    if args.entries:
        scopes = _all_scopes(service)
        found, skipped = service.store.entries(scopes)
        rows = [
            {
                "path": e.canonical,
                "kind": e.kind,
                "origin": e.fields.origin,
                "first_line": e.first_line,
                "hash": e.hash[:12],
            }
            for e in found
        ]
        if args.json:
            print(safe_json(rows))
        else:
            for row in rows:
                line = f"{row['path']}  ({row['kind']}, {row['origin']})  {row['first_line']}"
                print(visible(line))
            for key in skipped:
                print(f"(skipped {key}: linked or unreadable)", file=sys.stderr)
        return 0
    items = service.pending()
    if args.json:
        print(safe_json([s.to_dict() for s in items]))
    else:
        if not items:
            print("No memory suggestions are waiting.")
        for s in items:
            print(visible(f"{s.id}  {s.describe()}"))
    return 0


def _all_scopes(service: MemoryService) -> list[Scope]:
    return service.all_scopes()


def _explain(service: MemoryService, args: argparse.Namespace) -> int:
    from engine.memory.errors import MemoryStoreError

    try:
        info = service.explain(args.path)
    except MemoryStoreError as exc:
        print(f"brim: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(info.__dict__))
        return 0
    print(f"{info.path}  ({info.kind}, origin {info.origin})  id {info.entry_id or '-'}")
    print(f"  content hash {info.hash}")
    if not info.records:
        print("  no receipts yet")
    for r in info.records:
        print(
            f"  {r['status']:<9} exposure {r['exposure'] or '-':<8} entry {r['entry_hash']} "
            f"request {r['request']} conversation {r['conversation']} at {r['at']}"
        )
    return 0


def _with_log_file(paths: BrimPaths, run: Callable[[], int]) -> int:
    """A detached reflection has no terminal: what it logs goes to logs/memory.log too."""
    handler: logging.Handler | None = None
    logger = logging.getLogger("engine.memory")
    try:
        paths.logs_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(paths.logs_dir / "memory.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    except OSError:
        handler = None
    try:
        return run()
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            handler.close()


async def _reflect(args: argparse.Namespace, paths: BrimPaths, command: str) -> int:
    from engine.cli import CliError, agent_from_flags
    from engine.config import load_agents
    from engine.memory.extractor import provider_complete
    from engine.memory.reflect import learn_conversation, reflect_conversation
    from engine.memory.runtime import extractor_budget
    from engine.memory.service import MemoryService
    from engine.messages import user
    from engine.session import probe_window, provider_for
    from engine.store import Store
    from engine.tokens import counter_for

    store = Store.open(paths.ensure().db_path)
    try:
        infos = []
        for conversation_id in dict.fromkeys(args.conversation):
            found = store.get_conversation(conversation_id)
            if found is None:
                raise CliError(f"no conversation with id {conversation_id!r}")
            infos.append(found)
        first = infos[0]
        if not args.agent and not args.provider:
            names = {a.name for a in load_agents(paths.agents_dir)[0]}
            args.agent = first.agent if first.agent in names else None
        agent = agent_from_flags(args, paths)
        if args.summarizer_model:
            agent = agent.with_changes(summarizer_model=args.summarizer_model)
        service = MemoryService.for_paths(paths)
        provider = provider_for(agent)
        reports = []
        try:
            window = await probe_window(provider, agent)
            counter = counter_for(provider, agent.model)
            model = agent.summarizer_model or agent.model
            run = learn_conversation if command == "learn" else reflect_conversation
            for info in infos:
                workspace = args.workspace or (Path(info.workspace) if info.workspace else None)
                report = await run(
                    store.records(info.id),
                    info.id,
                    service=service,
                    scopes=service.scopes(info.agent or agent.name, workspace),
                    complete=provider_complete(provider, model, num_ctx=agent.num_ctx),
                    count_text=lambda text: counter.count_message(user(text)),
                    input_budget=extractor_budget(window.window),
                )
                reports.append(report)
                logging.getLogger("engine.memory").info(
                    "memory %s %s: claimed %d messages (%d..%d], scanned %d, skipped %d "
                    "chunks, queued %s",
                    command,
                    info.id,
                    report.claimed,
                    report.previous,
                    report.through,
                    report.scanned,
                    report.skipped_chunks,
                    report.queued,
                )
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
