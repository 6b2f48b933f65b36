"""What can go wrong on the desktop side of the engine wall.

DesktopError
 └── EngineStopped     an intent arrived after the engine thread was stopped (or before it
                       started); the caller drops the intent rather than leak a coroutine
"""

from __future__ import annotations


class DesktopError(Exception):
    """The root of every error the desktop package raises on purpose."""


class EngineStopped(DesktopError):
    """The engine thread is not running, so nothing can be scheduled on its loop."""
