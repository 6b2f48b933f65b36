"""What a summarizer model has shown it can write, kept across its conversations.

A small model refuses the free-form checkpoint (it echoes, loops or invents) and often
every guided question too; asking again at every compaction costs the instruction, the
questions and their answers each time, and the user waits for all of it. So each
compaction's outcome is counted per summarizer (engine kind and model): once a model has
had its free-form checkpoint refused `SKIP_AFTER` times and never accepted, later
compactions ask the guided questions straight away; once its guided rounds (which follow
every refusal) have given nothing `SKIP_AFTER` times and more often than a line, and it
never wrote a free-form checkpoint either, later compactions write the checkpoint from
what Brim records itself (the user's statements, the first request, the files and commands)
without asking the model. Every `ASK_AGAIN_EVERY`th compaction asks again anyway, so a
prompt or a model that improves is seen. The record is a small JSON file in Brim's data
folder; one that cannot be read or written is an empty record, never an error.

A model the bench has measured (the bundled ones: resources/summarizers.toml, written by
`python -m bench summarizer_seed`) starts from what the bench saw it write, so even its
first compaction asks nothing it was measured unable to answer; what it then writes in the
user's own conversations counts beside that, and a checkpoint or a fact it does write
outweighs every refusal.
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
# What a model's answers showed, the counts a measured seed adds to; the others
# (`compactions`, `memory_passes`) pace the asking again and are the user's own.
EVIDENCE = (
    "freeform_accepted",
    "freeform_refused",
    "guided_useful",
    "guided_empty",
    "memory_queued",
    "memory_empty",
)


@dataclass
class SummarizerRecord:
    """One summarizer's counts; `path` None keeps them for this process only. `seed`: what
    the bench measured of this model (evidence counts only), counted beside the user's."""

    key: str
    path: Path | None = None
    counts: dict[str, int] = field(default_factory=dict)
    seed: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(
        cls, key: str, path: Path | None, seed: dict[str, int] | None = None
    ) -> SummarizerRecord:
        record = cls(key, path, seed={k: v for k, v in (seed or {}).items() if k in EVIDENCE})
        if path is not None:
            try:
                everything = json.loads(path.read_text(encoding="utf-8"))
                found = everything.get(key, {}) if isinstance(everything, dict) else {}
                record.counts = {k: int(v) for k, v in found.items() if isinstance(v, int)}
            except (OSError, ValueError):
                pass  # no record yet, or one that cannot be read: ask the model
        return record

    def _n(self, name: str) -> int:
        """The user's own count, plus the bench's for what answers showed."""
        return self.counts.get(name, 0) + self.seed.get(name, 0)

    def ask(self) -> SummaryAsk:
        """What the next compaction asks of the model."""
        if self._n("compactions") % ASK_AGAIN_EVERY == ASK_AGAIN_EVERY - 1:
            return "freeform"
        if self._n("freeform_accepted") or not self._n("freeform_refused"):
            return "freeform"
        empty = self._n("guided_empty")
        if empty >= SKIP_AFTER and empty > self._n("guided_useful"):
            return "mechanical"  # its guided rounds gave nothing more often than something
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
        self._bump("memory_passes")
        if queued is not None:
            name = "memory_queued" if queued > 0 else "memory_empty"
            self._bump(name)
        self._save()

    def note(self, *, asked: SummaryAsk, freeform_refused: bool, source: str) -> None:
        """One compaction's outcome: what was asked and what its checkpoint came from."""
        self._bump("compactions")
        if asked == "freeform":
            name = "freeform_refused" if freeform_refused else "freeform_accepted"
            self._bump(name)
        if asked != "mechanical" and freeform_refused:  # the guided questions were asked
            name = "guided_useful" if source == "guided" else "guided_empty"
            self._bump(name)
        self._save()

    def _bump(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

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
