"""What the headless commands print to a terminal: an engine's words shown, never obeyed.

An engine's error message or model list may hold an OSC sequence that retitles the window,
a clear-screen, colours or a bidi override that reorders the line. The window already shows
such characters instead of obeying them (engine/memory/plaintext.py's `visible`: ESC as ␛,
others as <U+202E>); `brim chat --headless` and `brim probe` print through the same rule,
after taking out the keys Brim knows (a 401 body that echoed one).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from engine.memory.plaintext import visible
from engine.redaction import without_known


def shown(text: str, keys: Iterable[str] = ()) -> str:
    """`text` as a terminal may print it: no known key, control characters made visible."""
    return visible(without_known(text, keys))


def say(text: str, keys: Iterable[str] = ()) -> None:
    """One line on stderr, shown safely."""
    print(shown(text, keys), file=sys.stderr)
