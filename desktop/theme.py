"""Colours and the style sheet, in one place so views agree on what each colour means.

The style sheet itself is a file, resources/style/app.qss; its placeholders name the colours
below.
"""

from __future__ import annotations

from importlib import resources
from string import Template
from typing import Final

TEXT: Final = "#1d2430"
MUTED: Final = "#5f6b7a"
BORDER: Final = "#d9dee6"
WINDOW_BG: Final = "#f4f6f9"
SURFACE: Final = "#ffffff"

USER_BG: Final = "#e9f0fb"
USER_BORDER: Final = "#c9d8f2"
USER_ACCENT: Final = "#1f5fbf"
ASSISTANT_ACCENT: Final = "#2c7a4b"
INFO_BG: Final = "#f1f3f6"
WARNING_BG: Final = "#fff4d6"
WARNING_TEXT: Final = "#7a5200"
ERROR_BG: Final = "#fdecea"
ERROR_BORDER: Final = "#f3b8b2"
ERROR_TEXT: Final = "#a4261b"
CODE_BG: Final = "#f3f4f6"
TOOL_BG: Final = "#f7f8fa"
TOOL_TEXT: Final = "#36465c"
COMPACT_BG: Final = "#f1ebfc"
COMPACT_TEXT: Final = "#5b3a9b"
INFO_TEXT: Final = "#1f5fbf"
INFO_BANNER_BG: Final = "#e9f0fb"

# The context rail: fill by level, the ladder's marks, the reserve zone, the timeline markers.
FILL_OK: Final = "#3b82c4"
FILL_WARN: Final = "#d99a1e"
FILL_CRITICAL: Final = "#c8412f"
TRACK: Final = "#e6e9ef"
WARN_MARK: Final = "#d99a1e"
CRITICAL_MARK: Final = "#c8412f"
RESERVE: Final = "#b9a6dd"
ALARM: Final = "#c8412f"  # a reported 0% cache
MARKER_COLOURS: Final[dict[str, str]] = {
    "compaction": "#7c4dcc",
    "trim": "#d9731e",
    "clear": "#2a9d8f",
}

# The state pill: background and text colour per state word; unknown states are neutral.
STATE_COLOURS: Final[dict[str, tuple[str, str]]] = {
    "ready": ("#dff3e6", "#1e6b3c"),
    "thinking": ("#e6ecf7", "#3b5a8c"),
    "streaming": ("#dde9fb", "#1f5fbf"),
    "waiting for the engine": ("#e8ebf0", "#36465c"),
    "unreachable": (ERROR_BG, ERROR_TEXT),
    "loading model": ("#fff0cc", "#7a5200"),
    "compacting": ("#ece2fb", "#5b3a9b"),
    "waiting for approval": ("#fde3cf", "#8a3d00"),
    "error": (ERROR_BG, ERROR_TEXT),
    "not started": (ERROR_BG, ERROR_TEXT),
}
NEUTRAL_STATE: Final = ("#e8ebf0", MUTED)


def style_sheet(name: str) -> str:
    """resources/style/<name>.qss with its `${NAME}` placeholders filled from the colours
    above (a missing file or an unknown colour is an error, never an unstyled window)."""
    try:
        template = (resources.files("resources") / "style" / f"{name}.qss").read_text("utf-8")
    except (ModuleNotFoundError, OSError) as exc:
        raise RuntimeError(
            f"Brim's style sheet resources/style/{name}.qss is missing: {exc}"
        ) from exc
    colours = {k: v for k, v in globals().items() if k.isupper() and isinstance(v, str)}
    return Template(template).substitute(colours)


STYLE_SHEET: Final = style_sheet("app")
