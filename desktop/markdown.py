"""A finished answer as HTML that Qt's rich text understands, with code highlighted.

Qt's own `setMarkdown` is fast but leaves code blocks plain; markdown-it-py parses (tables and
strikethrough on, raw HTML off: a model's output is text, not markup to trust) and pygments
colours each fenced block with inline styles, the only kind Qt's HTML subset reads. Streaming
text is never rendered here: only once a message is complete.
"""

from __future__ import annotations

import html

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name, guess_lexer
from pygments.util import ClassNotFound

from desktop import theme

CODE_STYLE = "default"
# Guessing a language for an unlabelled block is slow on long blocks and often wrong.
GUESS_LIMIT = 2_000


def _parser() -> MarkdownIt:
    # The finished answer keeps the layout it streamed with: a line break stays a line break
    # (a poem stays in its lines), and a line of dashes under a paragraph is a rule, not a
    # setext heading that turns the paragraph above it bold.
    options = {"html": False, "linkify": False, "typographer": False, "breaks": True}
    md = MarkdownIt("commonmark", options)
    md.enable(["table", "strikethrough"])
    md.disable("lheading")
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _fence)
    md.add_render_rule("code_inline", _code_inline)
    md.add_render_rule("table_open", _table_open)
    return md


def _lexer(info: str, code: str):  # type: ignore[no-untyped-def]
    name = info.strip().split()[0] if info.strip() else ""
    if name:
        try:
            return get_lexer_by_name(name)
        except ClassNotFound:
            return None
    if len(code) <= GUESS_LIMIT:
        try:
            lexer = guess_lexer(code)
        except ClassNotFound:
            return None
        # A guess that falls back to plain text is no guess.
        return None if lexer.name == "Text only" else lexer
    return None


def highlight_code(code: str, info: str = "") -> str:
    """One code block as a tinted, monospaced HTML table cell (Qt paints a cell's background
    reliably, a <pre>'s not always)."""
    lexer = _lexer(info, code)
    if lexer is not None:
        formatter = HtmlFormatter(nowrap=True, noclasses=True, style=CODE_STYLE)
        body = highlight(code, lexer, formatter).rstrip("\n")
    else:
        body = html.escape(code.rstrip("\n"))
    return (
        f'<table width="100%" cellspacing="0" cellpadding="8" '
        f'style="background-color:{theme.CODE_BG}; margin-top:4px; margin-bottom:8px;">'
        # pre-wrap: a long line wraps inside its block instead of widening the transcript.
        f"<tr><td><pre style=\"font-family:'DejaVu Sans Mono',monospace; margin:0; "
        f'white-space:pre-wrap;">'
        f"{body}</pre></td></tr></table>"
    )


def _fence(self, tokens, idx, options, env):  # type: ignore[no-untyped-def]
    token = tokens[idx]
    return highlight_code(token.content, token.info or "")


def _code_inline(self, tokens, idx, options, env):  # type: ignore[no-untyped-def]
    code = html.escape(tokens[idx].content)
    return (
        f"<code style=\"font-family:'DejaVu Sans Mono',monospace; "
        f'background-color:{theme.CODE_BG};">{code}</code>'
    )


def _table_open(self, tokens, idx, options, env):  # type: ignore[no-untyped-def]
    return (
        f'<table border="1" cellspacing="0" cellpadding="5" '
        f'style="border-color:{theme.BORDER}; border-style:solid; margin-bottom:6px;">'
    )


class MarkdownRenderer:
    """One parser, reused (building it costs more than rendering a short answer)."""

    def __init__(self) -> None:
        self._md = _parser()

    def to_html(self, text: str) -> str:
        return self._md.render(text)
