"""Streaming 20,000 tokens into the window: the 30 Hz buffer against a per-token append.

A scripted session on the engine thread (bench/streaming_session.py) emits every token as fast
as it can (far faster than a local model), through the real bridge, into the real window,
offscreen. A 5 ms heartbeat
timer on the GUI thread measures how long the Qt event loop went without running: the
longest gap between two beats, less the interval, is the longest stall a user would feel as
a frozen window. The final Markdown render of the whole answer is timed on its own, since it
happens once, after the last token.

The naive case appends each token to the transcript as it arrives. It gets slower as the
document grows, so when run from `python -m bench` it stops after NAIVE_BUDGET_S and says how
many tokens it got through; `python -m bench.ui_streaming --full` streams all 20,000.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer

from bench import format_table

TOKENS = 20_000
HEARTBEAT_MS = 5
NAIVE_BUDGET_S = 8.0


def answer_tokens(count: int = TOKENS) -> list[str]:
    """Prose with a code block every so often, split the way engines stream it."""
    words = ["the", "context", "window", "holds", "what", "the", "model", "can", "attend"]
    out: list[str] = []
    for i in range(count):
        if i % 400 == 399:
            out.append("\n\n```python\nprint('checkpoint')\n```\n\n")
        elif i % 60 == 59:
            out.append(".\n\n")
        else:
            out.append(" " + words[i % len(words)])
    return out


class Heartbeat:
    """Records the gaps between ticks of a short timer on the GUI thread."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self._beat)
        self.last = 0.0
        self.gaps: list[tuple[float, float]] = []

    def start(self) -> None:
        self.last = time.perf_counter()
        self.gaps = []
        self.timer.start()

    def _beat(self) -> None:
        now = time.perf_counter()
        self.gaps.append((self.last, now))
        self.last = now

    def stop(self) -> None:
        self._beat()
        self.timer.stop()

    def longest_ms(self, excluding: list[tuple[float, float]] | None = None) -> float:
        """The longest stall, in milliseconds beyond the timer's interval. Time spent inside
        the `excluding` intervals (the final render) is cut out of the gaps that hold it."""
        longest = 0.0
        for start, end in self.gaps:
            pieces = [(start, end)]
            for a, b in excluding or []:
                pieces = (
                    [
                        part
                        for s, e in pieces
                        for part in ((s, min(e, a)), (max(s, b), e))
                        if part[1] > part[0]
                    ]
                    if start <= a and b <= end
                    else pieces
                )
            longest = max([longest, *(e - s for s, e in pieces)])
        return max(0.0, longest * 1000 - HEARTBEAT_MS)


def _pump_until(condition: Any, deadline: float) -> bool:
    while not condition():
        if time.perf_counter() > deadline:
            return False
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
    return True


def _tokens_in(tokens: list[str], chars: int) -> int:
    """How many whole tokens the first `chars` characters of the answer hold."""
    total = 0
    for index, token in enumerate(tokens):
        total += len(token)
        if total > chars:
            return index
    return len(tokens)


def run_case(naive: bool, tokens: list[str], budget_s: float | None) -> dict[str, Any]:
    from bench.streaming_session import StreamingSession
    from desktop.app import DesktopApp, ensure_application

    ensure_application()
    app = DesktopApp(lambda sink: StreamingSession(sink, tokens, window=131072))
    window = app.window
    window.resize(1280, 800)
    window.show()
    opened: list[object] = []
    app.bridge.opened.connect(opened.append)
    _pump_until(lambda: bool(opened), time.perf_counter() + 30)
    transcript = window.transcript
    if naive:  # every token crosses on its own and goes straight into the document
        app.bridge.coalesce_deltas = False
        window.stream.append = transcript.append_stream  # type: ignore[method-assign]
    renders: list[tuple[float, float]] = []
    finish = transcript.finish_stream

    def timed_finish() -> None:
        began = time.perf_counter()
        finish()
        renders.append((began, time.perf_counter()))

    transcript.finish_stream = timed_finish  # type: ignore[method-assign]
    heartbeat = Heartbeat()
    expected = "".join(tokens)
    rows = transcript.rows

    def shown() -> int:
        streaming = [r for r in rows() if r.kind == "assistant"]
        return len(streaming[-1].text) if streaming else 0

    heartbeat.start()
    started = time.perf_counter()
    window.send_message("Write a very long answer.")
    deadline = started + (budget_s if budget_s is not None else 3600)
    complete = _pump_until(lambda: shown() >= len(expected) or not app.bridge.busy, deadline)
    complete = complete and shown() >= len(expected)
    done_chars = shown()
    if not complete:
        window.cancel_turn()
    _pump_until(lambda: not app.bridge.busy and not transcript.streaming, time.perf_counter() + 600)
    heartbeat.stop()
    total_s = time.perf_counter() - started
    render_ms = max((b - a) * 1000 for a, b in renders) if renders else None
    done_tokens = len(tokens) if complete else _tokens_in(tokens, done_chars)
    app.shutdown()
    window.close()
    window.deleteLater()
    QCoreApplication.processEvents()
    return {
        "case": "naive per-token append" if naive else "buffered, 30 Hz flush",
        "tokens": done_tokens,
        "finished": "yes" if complete else f"no (stopped at {budget_s:g} s)",
        "total_s": round(total_s, 2),
        "stall_streaming_ms": round(heartbeat.longest_ms(renders), 1),
        "final_render_ms": round(render_ms, 1) if render_ms is not None else None,
        "longest_stall_ms": round(heartbeat.longest_ms(), 1),
    }


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Brim's buffered stream beside the naive per-token append."""
    brim, naive = rows[0], rows[1]
    baseline = "naive per-token append" + ("" if naive["finished"] == "yes" else ", cut short")
    return [
        {
            "measure": f"stream {brim['tokens']:,} tokens into the window, total (s)",
            "brim": brim["total_s"],
            "baseline": naive["total_s"],
            "baseline is": baseline,
        },
        {
            "measure": "longest event-loop stall while streaming (ms)",
            "brim": brim["stall_streaming_ms"],
            "baseline": naive["stall_streaming_ms"],
            "baseline is": baseline,
        },
    ]


def main(full: bool = False) -> list[dict[str, Any]]:
    tokens = answer_tokens()
    return [
        run_case(False, tokens, None),
        run_case(True, tokens, None if full else NAIVE_BUDGET_S),
    ]


if __name__ == "__main__":
    print(format_table(main(full="--full" in sys.argv[1:])))
