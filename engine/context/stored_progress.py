"""What a long pass already did, kept when it outgrows the checkpoint's cap.

Covered So Far and Done are the checkpoint's anti-repetition record: a pass that forgets the
files it read (or edited) does them again. On a small window the cap (`cap_checkpoint`)
keeps only the newest few dozen paths, so the entries it leaves out of those two sections
are written to the tool-result store instead, and the checkpoint names the stored file
(Stored Progress) for the model to read with `retrieve_tool_result`. Like the user's stored
statements, the references are carried from checkpoint to checkpoint.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence

from engine.context.checkpoint import (
    cap_checkpoint,
    checkpoint_entries,
    covered_items,
    item_key,
    parse_checkpoint,
    render_checkpoint,
)
from engine.context.constants import COVERED_SECTION, STORED_PROGRESS_SECTION
from engine.context.stated import StoreText

log = logging.getLogger(__name__)

CountText = Callable[[str], int]
STORED_ID_PREFIX = "checkpoint-progress-"
STORED_HEAD = (
    "Earlier in this conversation you already did and read the following; the summary "
    "left it out to fit the window. Do not redo it."
)
# Kept for the reference line a spill adds (the model face's sentence around the id).
REFERENCE_TOKENS = 40


def stored_progress(checkpoint: str) -> list[str]:
    """The stored files a checkpoint names for its progress, in order."""
    return [e.strip("`") for e in checkpoint_entries(checkpoint).get(STORED_PROGRESS_SECTION, [])]


def with_stored_progress(checkpoint: str, refs: Sequence[str]) -> str:
    """`checkpoint` naming `refs` (and no others) under Stored Progress."""
    _, sections = parse_checkpoint(checkpoint)
    unique = list(dict.fromkeys(r for r in refs if r))
    sections[STORED_PROGRESS_SECTION] = [f"- `{ref}`" for ref in unique]
    return render_checkpoint(sections)


def _left_out(whole: str, capped: str) -> tuple[list[str], list[str]]:
    """The Done entries and Covered So Far items of `whole` that `capped` left out."""
    done_kept = set(checkpoint_entries(capped).get("Done", []))
    done = [e for e in checkpoint_entries(whole).get("Done", []) if e not in done_kept]
    covered_kept = {item_key(i) for i in covered_items(capped)}
    covered = [i for i in covered_items(whole) if item_key(i) not in covered_kept]
    return done, covered


def _store(done: list[str], covered: list[str], store: StoreText | None) -> str | None:
    lines = [STORED_HEAD]
    if done:
        lines += ["", "Done:", *(f"- {e}" for e in done)]
    if covered:
        lines += ["", f"{COVERED_SECTION} (files read or looked at):", *(f"- {i}" for i in covered)]
    text = "\n".join(lines) + "\n"
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    ref = STORED_ID_PREFIX + digest
    if store is None:
        log.warning("no store for %d entries the checkpoint left out", len(done) + len(covered))
        return None
    try:
        if store(ref, text):
            return ref
    except Exception:
        log.warning("could not store the entries the checkpoint left out", exc_info=True)
        return None
    log.warning("could not store the entries the checkpoint left out")
    return None


def cap_keeping_progress(
    checkpoint: str,
    max_tokens: int,
    count_text: CountText,
    count_line: CountText,
    store: StoreText | None,
) -> str:
    """`checkpoint` held to `max_tokens` as `cap_checkpoint` holds it, except that the Done
    and Covered So Far entries it leaves out are stored, and the checkpoint names the file."""
    capped = cap_checkpoint(checkpoint, max_tokens, count_text, count_line)
    done, covered = _left_out(checkpoint, capped)
    if not (done or covered) or store is None:
        return capped
    capped = cap_checkpoint(checkpoint, max_tokens - REFERENCE_TOKENS, count_text, count_line)
    done, covered = _left_out(checkpoint, capped)
    ref = _store(done, covered, store)
    if ref is None:
        return capped
    return with_stored_progress(capped, [*stored_progress(capped), ref])
