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
"""
