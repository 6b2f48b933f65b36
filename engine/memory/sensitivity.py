"""Memory never holds a secret: a write whose text looks like one (engine/secret_detection.py)
is refused whole."""

from __future__ import annotations

from engine.memory.errors import SensitiveContent
from engine.secret_detection import find_secret


def check_not_secret(*texts: str) -> None:
    """`SensitiveContent` when any of `texts` looks like a secret. The message names the
    kind only, never the text, so a refusal can be logged and shown to the model."""
    for text in texts:
        found = find_secret(text)
        if found is not None:
            raise SensitiveContent(
                f"this looks like {found}; memory never stores secrets, so nothing was saved"
            )
