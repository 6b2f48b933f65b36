"""`brim memory …`: list, review, accept, reject, forget, explain, and (engine/cli/reflect.py)
reflect and learn."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.cli.arguments import add_data_dir_flag
from engine.cli.errors import EXIT_USAGE
from engine.cli.reflect import add_reflect_parsers, cmd_reflect
from engine.cli.review import run_review
from engine.memory.errors import MemoryStoreError
from engine.memory.plaintext import safe_json, visible
from engine.memory.review import REVIEW_PAGE_SIZE
from engine.memory.service import MemoryService
from engine.paths import BrimPaths


def _page_size(value: str) -> int:
    """0 used to mean the default and a negative size reviewed nothing, silently."""
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {value!r}") from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {size}")
    return size


def add_memory_parser(sub: Any) -> None:
    memory = sub.add_parser("memory", help="review and manage memory")
    msub = memory.add_subparsers(dest="memory_command", required=True)

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

    add_reflect_parsers(msub)
    for command in msub.choices.values():
        add_data_dir_flag(command)


def cmd_memory(args: argparse.Namespace, paths: BrimPaths) -> int:
    command = args.memory_command
    if command in ("reflect", "learn"):
        return cmd_reflect(args, paths)
    service = MemoryService.for_paths(paths)
    if command == "list":
        return _list(service, args)
    if command == "review":
        result = run_review(service, page_size=args.page_size or REVIEW_PAGE_SIZE)
        return 1 if result.failed else 0
    if command in ("accept", "reject"):
        return _decide(service, args, command)
    if command == "forget":
        try:
            gone = service.forget(args.path)
        except MemoryStoreError as exc:
            print(f"brim: {exc}", file=sys.stderr)
            return 1
        print(f"forgot {gone}")
        return 0
    if command == "explain":
        return _explain(service, args)
    return EXIT_USAGE


def _decide(service: MemoryService, args: argparse.Namespace, command: str) -> int:
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


def _list(service: MemoryService, args: argparse.Namespace) -> int:
    """The queue or the entries; text from older or hand-edited files shows its control
    characters (␛, <U+202E>) instead of sending them to the terminal."""
    if args.entries:
        found, skipped = service.store.entries(service.all_scopes())
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


def _explain(service: MemoryService, args: argparse.Namespace) -> int:
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
