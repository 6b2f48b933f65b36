"""Colours and the style sheet, in one place so views agree on what each colour means."""

from __future__ import annotations

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
    "streaming": ("#dde9fb", "#1f5fbf"),
    "loading model": ("#fff0cc", "#7a5200"),
    "compacting": ("#ece2fb", "#5b3a9b"),
    "waiting for approval": ("#fde3cf", "#8a3d00"),
    "error": (ERROR_BG, ERROR_TEXT),
    "not started": (ERROR_BG, ERROR_TEXT),
}
NEUTRAL_STATE: Final = ("#e8ebf0", MUTED)

STYLE_SHEET: Final = f"""
QMainWindow, QWidget#central {{ background: {WINDOW_BG}; }}
QFrame#header {{
    background: {SURFACE};
    border-bottom: 1px solid {BORDER};
}}
QLabel#agentName {{ color: {TEXT}; font-weight: 600; }}
QLabel#modelName, QLabel#turn, QLabel#rate {{ color: {MUTED}; }}
QLabel#context {{ color: {TEXT}; }}
QLabel#statePill {{ border-radius: 9px; padding: 2px 10px; font-weight: 600; }}
QFrame#banner {{
    background: {ERROR_BG};
    border: 1px solid {ERROR_BORDER};
    border-radius: 6px;
}}
QLabel#bannerText {{ color: {ERROR_TEXT}; }}
QToolButton#bannerClose {{ color: {ERROR_TEXT}; border: none; padding: 2px 6px; }}
QTextBrowser#transcript {{
    background: {SURFACE};
    border: 1px solid {BORDER};
    border-radius: 6px;
    color: {TEXT};
}}
QFrame#composerBox {{
    background: {SURFACE};
    border: 1px solid {BORDER};
    border-radius: 6px;
}}
QPlainTextEdit#composer {{ background: transparent; border: none; color: {TEXT}; }}
QPushButton#sendButton {{
    background: {USER_ACCENT};
    color: white;
    border: none;
    border-radius: 5px;
    padding: 6px 16px;
    font-weight: 600;
}}
QPushButton#sendButton:disabled {{ background: #9db3d6; }}
QPushButton#sendButton[stop="true"] {{ background: {ERROR_TEXT}; }}
QLabel#hint {{ color: {MUTED}; }}
QFrame#rail {{ background: {SURFACE}; border-left: 1px solid {BORDER}; }}
QFrame#railBody, QScrollArea#railScroll, QWidget#railViewport {{ background: {SURFACE}; }}
QFrame#sidebar {{ background: #eef1f5; border-right: 1px solid {BORDER}; }}
QLabel#sectionTitle {{ color: {MUTED}; font-weight: 600; letter-spacing: 1px; }}
QLabel#railHeadline {{ color: {TEXT}; font-weight: 600; }}
QLabel#railMuted {{ color: {MUTED}; }}
QLabel#railValue {{ color: {TEXT}; }}
QLabel#cacheAlarm {{ color: {ALARM}; font-weight: 600; }}
QTreeWidget#agents {{ background: transparent; border: none; }}
QTreeWidget#agents::item {{ padding: 3px 2px; }}
QTreeWidget#agents::item:selected {{ background: #d6e2f5; color: {TEXT}; }}
QPushButton#flat {{
    background: transparent; border: 1px solid {BORDER}; border-radius: 5px; padding: 4px 10px;
    color: {TEXT};
}}
QPushButton#flat:hover {{ background: #e4e9f0; }}
QFrame#undoBar {{ background: {TEXT}; border-radius: 6px; }}
QLabel#undoText {{ color: white; }}
QPushButton#undoButton {{
    background: transparent; color: #9cc3ff; border: none; font-weight: 600; padding: 2px 6px;
}}
QProgressBar#loadProgress {{
    border: 1px solid {BORDER}; border-radius: 4px; background: {SURFACE}; height: 14px;
    text-align: center; color: {TEXT};
}}
QProgressBar#loadProgress::chunk {{ background: {FILL_OK}; border-radius: 3px; }}
QFrame#overlayPanel {{
    background: {SURFACE}; border: 1px solid {BORDER}; border-radius: 10px;
}}
QFrame#overlayRail, QWidget#overlayContent, QScrollArea#overlayScroll,
QWidget#overlayViewport {{ background: {SURFACE}; }}
QLabel#overlayTitle {{ color: {TEXT}; font-weight: 600; font-size: 15px; }}
QPushButton#retryButton {{
    background: {ERROR_TEXT}; color: white; border: none; border-radius: 4px;
    padding: 3px 12px; font-weight: 600;
}}
"""
