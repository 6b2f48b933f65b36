"""What a summarizer model has shown it can write, kept across its conversations.

A small model refuses the free-form checkpoint (it echoes, loops or invents) and often
every guided question too; asking again at every compaction costs the instruction, the
questions and their answers each time, and the user waits for all of it. So each
compaction's outcome is counted per summarizer (engine kind and model): once a model has
had its free-form checkpoint refused `SKIP_AFTER` times and never accepted, later
compactions ask the guided questions straight away; once its guided rounds (which follow
every refusal) have given nothing `SKIP_AFTER` times and never a line, and it never wrote a
free-form checkpoint either, later compactions write the checkpoint from
what Brim records itself (the user's statements, the first request, the files and commands)
without asking the model. Every `ASK_AGAIN_EVERY`th compaction asks again anyway, so a
prompt or a model that improves is seen. The record is a small JSON file in Brim's data
folder; one that cannot be read or written is an empty record, never an error.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.atomic import atomic_write_text

log = logging.getLogger(__name__)

SummaryAsk = Literal["freeform", "guided", "mechanical"]
SKIP_AFTER = 1  # a whole compaction with every answer refused: a capable model rarely has one
ASK_AGAIN_EVERY = 5


@dataclass
class SummarizerRecord:
    """One summarizer's counts; `path` None keeps them for this process only."""

    key: str
    path: Path | None = None
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, key: str, path: Path | None) -> SummarizerRecord:
        record = cls(key, path)
        if path is not None:
            try:
                everything = json.loads(path.read_text(encoding="utf-8"))
                found = everything.get(key, {}) if isinstance(everything, dict) else {}
                record.counts = {k: int(v) for k, v in found.items() if isinstance(v, int)}
            except (OSError, ValueError):
                pass  # no record yet, or one that cannot be read: ask the model
        return record

    def _n(self, name: str) -> int:
        return self.counts.get(name, 0)

    def ask(self) -> SummaryAsk:
        """What the next compaction asks of the model."""
        if self._n("compactions") % ASK_AGAIN_EVERY == ASK_AGAIN_EVERY - 1:
            return "freeform"
        if self._n("freeform_accepted") or not self._n("freeform_refused"):
            return "freeform"
        if not self._n("guided_useful") and self._n("guided_empty") >= SKIP_AFTER:
            return "mechanical"
        return "guided" if self._n("freeform_refused") >= SKIP_AFTER else "freeform"

    def asks_memory(self) -> bool:
        """Whether the next compaction asks the model for memory suggestions: not once its
        extractions have queued nothing `SKIP_AFTER` times and never a fact (the user's own
        statements still wait from the deterministic pass), every `ASK_AGAIN_EVERY`th anyway."""
        if self._n("memory_passes") % ASK_AGAIN_EVERY == ASK_AGAIN_EVERY - 1:
            return True
        return bool(self._n("memory_queued")) or self._n("memory_empty") < SKIP_AFTER

    def note_memory(self, *, queued: int | None) -> None:
        """One compaction's extraction: how many facts the model queued (None: not asked)."""
        self.counts["memory_passes"] = self._n("memory_passes") + 1
        if queued is not None:
            name = "memory_queued" if queued > 0 else "memory_empty"
            self.counts[name] = self._n(name) + 1
        self._save()

    def note(self, *, asked: SummaryAsk, freeform_refused: bool, source: str) -> None:
        """One compaction's outcome: what was asked and what its checkpoint came from."""
        self.counts["compactions"] = self._n("compactions") + 1
        if asked == "freeform":
            name = "freeform_refused" if freeform_refused else "freeform_accepted"
            self.counts[name] = self._n(name) + 1
        if asked != "mechanical" and freeform_refused:  # the guided questions were asked
            name = "guided_useful" if source == "guided" else "guided_empty"
            self.counts[name] = self._n(name) + 1
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            everything = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(everything, dict):
                everything = {}
        except (OSError, ValueError):
            everything = {}
        everything[self.key] = self.counts
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(everything, indent=1, sort_keys=True))
        except OSError as exc:
            log.info("could not keep the summarizer record: %s", exc)
