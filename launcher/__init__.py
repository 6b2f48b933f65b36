"""The `brim` command: the one place above both rooms that knows both.

`engine/` decides and runs headless; `desktop/` draws. The launcher hands the engine's
command line a way to open the window, so neither room imports the other's entry point
(the house test forbids `desktop` under `engine/`).
"""

from __future__ import annotations

from engine.cli import main as cli_main


def open_window(argv: list[str]) -> int:
    """Start the desktop app with `argv` (its own flags: --data-dir, --workspace)."""
    from desktop.app import main as desktop_main  # Qt loads only when a window is wanted

    return desktop_main(argv)


def main(argv: list[str] | None = None) -> int:
    return cli_main(argv, open_window=open_window)
