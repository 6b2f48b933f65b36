"""The headless writer: text that cannot be encoded (a lone surrogate, from wherever it came)
is written as U+FFFD and the chat goes on; only a reader that went away closes the output."""

from __future__ import annotations

import io
import json

import pytest

from engine.cli.stdio import HeadlessOutput
from engine.events import DeltaEvent, NoticeEvent


def _stdout(monkeypatch: pytest.MonkeyPatch, encoding: str) -> io.BytesIO:
    raw = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(raw, encoding=encoding, errors="strict"))
    return raw


def _lines(raw: io.BytesIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in raw.getvalue().decode("utf-8").splitlines()]


def test_a_lone_surrogate_in_an_event_is_written_as_a_replacement_and_output_stays_open(
    monkeypatch: pytest.MonkeyPatch,
):
    raw = _stdout(monkeypatch, "utf-8")
    closed: list[bool] = []
    output = HeadlessOutput()
    output.on_close = lambda: closed.append(True)
    output.write(DeltaEvent("half \ud83d"))
    output.write(NoticeEvent("warning", "a pair \ud83d\ude00 joined"))
    output.write(DeltaEvent("and the next line"))
    assert not output.closed and closed == []
    assert [e.get("text") for e in _lines(raw)] == [
        "half \ufffd",
        "a pair \U0001f600 joined",
        "and the next line",
    ]


def test_a_stdout_that_is_not_utf8_gets_escaped_json_instead_of_a_closed_output(
    monkeypatch: pytest.MonkeyPatch,
):
    raw = _stdout(monkeypatch, "ascii")
    output = HeadlessOutput()
    output.write(DeltaEvent("smile \U0001f600"))
    assert not output.closed
    assert _lines(raw) == [{"type": "delta", "text": "smile \U0001f600"}]


def test_a_closed_stdout_still_closes_the_output(monkeypatch: pytest.MonkeyPatch):
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stream.close()
    monkeypatch.setattr("sys.stdout", stream)
    monkeypatch.setattr("engine.cli.stdio.silence_stdout", lambda: None)
    closed: list[bool] = []
    output = HeadlessOutput()
    output.on_close = lambda: closed.append(True)
    output.write(DeltaEvent("nobody reads this"))
    assert output.closed and closed == [True]
