"""Working state that outlives the context window: the journal and state.json.

Compaction is lossy by design, so what must not be lost is written outside the
conversation, in the conversation's work folder:

- `journal.jsonl`: every compaction's summary, appended before it enters the context
  (it persists something already paid for). Append-only, one JSON object per line, so a
  crash damages at most the last record, which reading skips. Capped per conversation and
  pruned oldest-first, since the newest record says where the task is.
- `state.json`: the agent's own record of where the work stands (`update_work_state`),
  patched field by field so a small correction cannot drop the rest; todos carry
  `verifiedBy`, because a completed todo nobody checked should say so.

Both are read back as claims, not fact: progress records are written mid-task and are
habitually optimistic about what was finished (engine/context/journal_preamble.py says how
the journal comes back on resume).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.atomic import atomic_write_text
from engine.context.constants import JOURNAL_MAX_ENTRIES
from engine.context.errors import WorkStateError

# The preamble a resume folds the journal into lives beside the checkpoint's face; its
# names stay importable from here.
from engine.context.journal_preamble import PREAMBLE_HEAD, journal_preamble  # noqa: F401

log = logging.getLogger(__name__)

JOURNAL_FILE = "journal.jsonl"
STATE_FILE = "state.json"
TODO_STATUSES = ("pending", "in_progress", "completed", "blocked", "cancelled")

CountText = Callable[[str], int]


class Journal:
    """`journal.jsonl` of one conversation."""

    def __init__(self, path: Path, max_entries: int = JOURNAL_MAX_ENTRIES) -> None:
        self.path = Path(path)
        self.max_entries = max_entries

    def append(self, entry: Mapping[str, Any]) -> None:
        """Add one record durably. A torn last line (a crash mid-write) is closed off first,
        so the new record never fuses with it."""
        line = json.dumps(dict(entry), ensure_ascii=False, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if self.max_entries and self._line_count() > self.max_entries:
            self._prune()

    def read(self) -> list[dict[str, Any]]:
        """Every whole record, oldest first; unreadable lines (a torn tail) are skipped."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        entries: list[dict[str, Any]] = []
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                value = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                log.warning("skipping a damaged line in %s", self.path)
                continue
            if isinstance(value, dict):
                entries.append(value)
        return entries

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def _line_count(self) -> int:
        with open(self.path, "rb") as handle:
            return sum(1 for line in handle if line.strip())

    def _prune(self) -> None:
        keep = self.read()[-self.max_entries :]
        text = "".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in keep
        )
        atomic_write_text(self.path, text)


def _merge(base: Any, patch: Any) -> Any:
    """Field-by-field merge: objects merge recursively, a null removes the field, anything
    else replaces."""
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return patch
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _merge_todos(current: Sequence[Any], patch: Any) -> list[dict[str, Any]]:
    """Todos are patched by `id`: a known id is merged field by field, a new one appended,
    `{"id": ..., "delete": true}` removes one. An item without id gets the next number."""
    if not isinstance(patch, list):
        raise WorkStateError("todos must be a list of objects")
    todos = [dict(t) for t in current if isinstance(t, dict)]
    index = {str(t.get("id")): i for i, t in enumerate(todos)}
    for item in patch:
        if not isinstance(item, dict):
            raise WorkStateError(f"a todo must be an object, got {item!r}")
        status = item.get("status")
        if status is not None and status not in TODO_STATUSES:
            raise WorkStateError(f"todo status {status!r} is not one of {', '.join(TODO_STATUSES)}")
        if "id" not in item:
            item = {"id": str(len(todos) + 1), **item}
            while item["id"] in index:
                item["id"] = str(int(item["id"]) + 1)
        key = str(item["id"])
        if item.get("delete"):
            if key in index:
                todos.pop(index[key])
                index = {str(t.get("id")): i for i, t in enumerate(todos)}
            continue
        if key in index:
            todos[index[key]] = _merge(todos[index[key]], item)
        else:
            todos.append({"status": "pending", "verifiedBy": "", **item})
            index[key] = len(todos) - 1
    return todos


class WorkState:
    """`state.json` of one conversation."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WorkStateError(f"{self.path}: not valid JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise WorkStateError(f"{self.path}: expected a JSON object")
        return value

    def update(self, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Apply a patch field by field and write the result atomically; returns it."""
        if not isinstance(patch, Mapping):
            raise WorkStateError("a work-state patch must be an object")
        state = self.read()
        rest = {k: v for k, v in patch.items() if k != "todos"}
        state = _merge(state, rest)
        if "todos" in patch:
            if patch["todos"] is None:
                state.pop("todos", None)
            else:
                state["todos"] = _merge_todos(state.get("todos", []), patch["todos"])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(state, ensure_ascii=False, indent=2) + "\n")
        return state

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def render_work_state(state: Mapping[str, Any]) -> str:
    """A compact text form for the summarizer's prompt and `/work`. A completed todo with
    nothing in verifiedBy is marked unverified."""
    if not state:
        return ""
    lines: list[str] = []
    for key, value in state.items():
        if key == "todos":
            continue
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        lines.append(f"{key}: {value}")
    todos = state.get("todos") or []
    if todos:
        lines.append("todos:")
        for todo in todos:
            if not isinstance(todo, dict):
                continue
            status = todo.get("status", "pending")
            text = todo.get("content") or todo.get("title") or todo.get("text") or ""
            mark = ""
            if status == "completed":
                verified = todo.get("verifiedBy") or ""
                mark = f" (verified by: {verified})" if verified else " (unverified)"
            lines.append(f"- [{status}] {text}{mark}")
    return "\n".join(lines)


def work_folder_files(folder: Path) -> tuple[Journal, WorkState]:
    """The journal and work state of one conversation's work folder."""
    folder = Path(folder)
    return Journal(folder / JOURNAL_FILE), WorkState(folder / STATE_FILE)
