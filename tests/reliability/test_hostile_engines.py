"""Hostile engines end to end: a stream no real engine should send (a chunk of the wrong
shape, bytes that are not UTF-8, a NUL, a 10 MB line, JSON nested 100,000 deep, a token
count of 1e308) ends that turn with one `protocol_error` naming the engine, and the next line
is answered; half an emoji or a lone surrogate is repaired (pairs split across events
joined, a lone half U+FFFD). Afterwards the conversation resumes with `--conversation ID`
and exports, nothing in it unencodable.

One real headless `brim` per engine kind takes every case as one line of input, against a
loopback double that serves the engine's real model and window answers and then the raw
bytes of each case as its chat stream (tests/helpers/fake_hostile.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeServer,
    FakeSglang,
    FakeVllm,
    OllamaModel,
)
from tests.helpers.fake_hostile import hostile, raw
from tests.reliability.headless import Headless, answered, errors

OK = "Hello from the fake engine."
DEEP = 100_000
TEN_MB = 10_000_000


@dataclass(frozen=True)
class Case:
    name: str
    body: list[bytes]
    # What the protocol_error that ends the turn must say (after "<engine> at <url> sent").
    says: str = ""
    # Not None: no error, and this is the answer the user must see, repaired.
    answer: str | None = None


# -- OpenAI-compatible SSE (llama-server, vLLM, SGLang) -----------------------------------


def _sse(*events: dict[str, Any] | bytes) -> list[bytes]:
    """Events as `data:` lines; a dict is JSON as the engines write it (non-ASCII escaped)."""
    out = []
    for event in events:
        data = event if isinstance(event, bytes) else json.dumps(event).encode()
        out.append(b"data: " + data + b"\n\n")
    return out


def _delta(delta: Any, finish: Any = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _text(text: str) -> dict[str, Any]:
    return _delta({"content": text})


_STOP = _delta({}, "stop")
_USAGE = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}}
_DONE = b"[DONE]"
_START = _delta({"role": "assistant", "content": ""})


def _openai_broken(event: dict[str, Any] | bytes) -> list[bytes]:
    """Some text, then the bad event, then an end as if nothing had happened."""
    return _sse(_START, _text("Partial "), event, _STOP, _USAGE, _DONE)


def _openai_answer(*pieces: str) -> list[bytes]:
    return _sse(_START, *(_text(p) for p in pieces), _STOP, _USAGE, _DONE)


def _openai_usage(**usage: Any) -> list[bytes]:
    return _sse(_START, _text("Partial "), _STOP, {"choices": [], "usage": usage}, _DONE)


OPENAI_CASES = [
    Case("delta is a string", _openai_broken(b'{"choices":[{"delta":"abc"}]}'), says="`delta`"),
    Case("choices is a number", _openai_broken(b'{"choices":5}'), says="`choices`"),
    Case(
        "a choice is a string", _openai_broken(b'{"choices":["abc"]}'), says="a choice that is not"
    ),
    Case("the event is a list", _openai_broken(b"[1, 2, 3]"), says="not a JSON object"),
    Case("content is a number", _openai_broken(_delta({"content": 5})), says="`delta.content`"),
    Case(
        "a tool call's function is a string",
        _openai_broken(
            _delta({"tool_calls": [{"index": 0, "id": "call_1", "function": "read_file"}]})
        ),
        says="`function`",
    ),
    Case(
        "tool_calls is an object",
        _openai_broken(_delta({"tool_calls": {"index": 0}})),
        says="`delta.tool_calls`",
    ),
    Case(
        "a tool call's arguments are a number",
        _openai_broken(
            _delta({"tool_calls": [{"index": 0, "function": {"name": "x", "arguments": 7}}]})
        ),
        says="`function.arguments`",
    ),
    Case("finish_reason is a number", _openai_broken(_delta({}, 3)), says="`finish_reason`"),
    Case(
        "an event nested 100,000 deep",
        _openai_broken(b'{"choices":' + b"[" * DEEP + b"]" * DEEP + b"}"),
        says="nested too deeply",
    ),
    Case(
        "a tool call's arguments nested 100,000 deep",
        _sse(
            _START,
            _delta(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "[" * DEEP + "]" * DEEP},
                        }
                    ]
                }
            ),
            _delta({}, "tool_calls"),
            _USAGE,
            _DONE,
        ),
        says="nested too deeply",
    ),
    Case(
        "prompt_tokens is 1e308",
        _openai_usage(prompt_tokens=1e308, completion_tokens=1),
        says="usage.prompt_tokens: 1e+308",
    ),
    Case(
        "prompt_tokens is negative",
        _openai_usage(prompt_tokens=-40, completion_tokens=1),
        says="usage.prompt_tokens: -40",
    ),
    Case(
        "completion_tokens is a fraction",
        _openai_usage(prompt_tokens=4, completion_tokens=2.5),
        says="usage.completion_tokens: 2.5",
    ),
    Case("usage is a list", _openai_broken(b'{"choices":[],"usage":[1]}'), says="`usage`"),
    Case(
        "bytes that are not UTF-8",
        _openai_broken(b'{"choices":[{"index":0,"delta":{"content":"caf\xe9 \xff"}}]}'),
        says="not UTF-8",
    ),
    Case(
        "a raw NUL",
        _openai_broken(b'{"choices":[{"index":0,"delta":{"content":"a\x00b"}}]}'),
        says="not JSON",
    ),
    Case("a 10 MB event", _openai_broken(_text("x" * TEN_MB)), says="longer than 8 MiB"),
    Case(
        "a 10 MB event over many data lines",
        [*_sse(_START, _text("Partial ")), b"data: " + b"x" * 999 + b"\n"] * 1
        + [b"data: " + b"x" * 999 + b"\n"] * (TEN_MB // 1000)
        + [b"\n"],
        says="longer than 8 MiB",
    ),
    Case(
        "a character cut across two network chunks",
        [
            *_sse(_START),
            b'data: {"choices":[{"index":0,"delta":{"content":"caf\xc3',
            b"\xa9 \xf0\x9f",
            b'\x98\x80"}}]}\n\n',
            *_sse(_STOP, _USAGE, _DONE),
        ],
        answer="caf\u00e9 \U0001f600",
    ),
    Case(
        "an emoji split across two events",
        _openai_answer("Smile ", "\ud83d", "\ude00", "!"),
        answer="Smile \U0001f600!",
    ),
    Case("a lone surrogate", _openai_answer("bad ", "\ud800", " char"), answer="bad \ufffd char"),
    Case("half an emoji at the end", _openai_answer("end ", "\ud83d"), answer="end \ufffd"),
    Case("an escaped NUL", _openai_answer("a\u0000b"), answer="a\ufffdb"),
]


# -- Ollama's NDJSON /api/chat ------------------------------------------------------------

OLLAMA_MODEL = "llama3.1:8b"
_STAMP = "2025-08-01T00:00:00.000000Z"


def _lines(*items: dict[str, Any] | bytes) -> list[bytes]:
    return [
        (item if isinstance(item, bytes) else json.dumps(item).encode()) + b"\n" for item in items
    ]


def _part(content: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {"model": OLLAMA_MODEL, "created_at": _STAMP, "message": message, "done": False}


def _done(**counts: Any) -> dict[str, Any]:
    return {
        "model": OLLAMA_MODEL,
        "created_at": _STAMP,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "prompt_eval_count": 12,
        "eval_count": 3,
        **counts,
    }


def _ollama_broken(line: dict[str, Any] | bytes) -> list[bytes]:
    return _lines(_part("Partial "), line, _done())


def _ollama_answer(*pieces: str) -> list[bytes]:
    return _lines(*(_part(p) for p in pieces), _done())


OLLAMA_CASES = [
    Case(
        "message is a string",
        _ollama_broken({"model": OLLAMA_MODEL, "message": "abc", "done": False}),
        says="cannot read (ValidationError)",
    ),
    Case("the line is a number", _ollama_broken(b"5"), says="cannot read (AttributeError)"),
    Case("the line is a list", _ollama_broken(b"[1, 2, 3]"), says="cannot read (AttributeError)"),
    Case("content is a number", _ollama_broken(_part(5)), says="cannot read (ValidationError)"),
    Case(
        "a tool call's function is a string",
        _ollama_broken(
            {
                "model": OLLAMA_MODEL,
                "message": {"role": "assistant", "content": "", "tool_calls": [{"function": "x"}]},
                "done": False,
            }
        ),
        says="cannot read (ValidationError)",
    ),
    Case(
        "a line nested 100,000 deep",
        _ollama_broken(b'{"message":' + b"[" * DEEP + b"]" * DEEP + b"}"),
        says="nested too deeply",
    ),
    Case(
        "prompt_eval_count is 1e308",
        _lines(_part("Partial "), _done(prompt_eval_count=1e308)),
        says="cannot read (ValidationError)",
    ),
    Case(
        "eval_count is negative",
        _lines(_part("Partial "), _done(eval_count=-3)),
        says="eval_count: -3",
    ),
    Case(
        "bytes that are not UTF-8",
        _ollama_broken(b'{"model":"m","message":{"role":"assistant","content":"caf\xe9"}}'),
        says="not UTF-8",
    ),
    Case(
        "a raw NUL",
        _ollama_broken(b'{"model":"m","message":{"role":"assistant","content":"a\x00b"}}'),
        says="cannot read (JSONDecodeError)",
    ),
    Case("a 10 MB line", _ollama_broken(_part("x" * TEN_MB)), says="longer than 8 MiB"),
    Case(
        "an emoji split across two lines",
        _ollama_answer("Smile ", "\ud83d", "\ude00", "!"),
        answer="Smile \U0001f600!",
    ),
    Case("a lone surrogate", _ollama_answer("bad ", "\ud800", " char"), answer="bad \ufffd char"),
    Case("an escaped NUL", _ollama_answer("a\u0000b"), answer="a\ufffdb"),
]


@dataclass(frozen=True)
class Engine:
    make: Callable[[], FakeServer]
    provider: str
    model: str
    name: str  # how Brim names it in messages
    cases: list[Case]


ENGINES = {
    "llama-server": Engine(
        lambda: FakeLlamaServer(n_ctx=4096), "llamacpp", "fake", "llama-server", OPENAI_CASES
    ),
    "vllm": Engine(
        lambda: FakeVllm(max_model_len=4096),
        "vllm",
        "Qwen/Qwen2.5-7B-Instruct",
        "vLLM",
        OPENAI_CASES,
    ),
    "sglang": Engine(
        lambda: FakeSglang(context_length=4096),
        "sglang",
        "meta-llama/Llama-3.1-8B-Instruct",
        "SGLang",
        OPENAI_CASES,
    ),
    "ollama": Engine(
        lambda: FakeOllama([OllamaModel(OLLAMA_MODEL, context_length=8192)]),
        "ollama",
        OLLAMA_MODEL,
        "Ollama",
        OLLAMA_CASES,
    ),
}


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@pytest.mark.parametrize("kind", list(ENGINES))
def test_every_hostile_stream_is_one_protocol_error_or_repaired_and_the_conversation_survives(
    kind: str, tmp_path: Path
):
    engine = ENGINES[kind]
    home = tmp_path / "home"
    with hostile(engine.make()) as fake:
        flags = ["--provider", engine.provider, "--model", engine.model, "--base-url", fake.url]
        brim = Headless(home, flags)
        try:
            brim.ready()
            for case in engine.cases:
                raw(fake, *case.body)
                events = brim.turn(f"case: {case.name}", timeout=60)
                if case.answer is None:
                    (error,) = errors(events)
                    assert error["kind"] == "protocol_error", (case.name, error)
                    assert f"{engine.name} at {fake.url} sent" in error["message"], case.name
                    assert case.says in error["message"], (case.name, error["message"])
                else:
                    assert errors(events) == [], (case.name, errors(events))
                    assert answered(events) == case.answer, case.name
                after = brim.turn(f"after: {case.name}")
                assert errors(after) == [] and answered(after) == OK, case.name
        finally:
            code = brim.close()
        assert code == 0, brim.stderr_tail()
        assert "Traceback" not in brim.stderr, brim.stderr_tail()

        listed = run_brim(["conversations", "list", "--json"], data_dir=home, timeout=60)
        (conversation,) = json.loads(listed.stdout)
        resumed = Headless(home, [*flags, "--conversation", conversation["id"]])
        try:
            resumed.ready()
            again = resumed.turn("still there?")
            assert errors(again) == [] and answered(again) == OK
        finally:
            assert resumed.close() == 0, resumed.stderr_tail()

    export = run_brim(
        ["conversations", "export", conversation["id"], "--json"], data_dir=home, timeout=60
    )
    assert export.returncode == 0, export.stderr
    messages = json.loads(export.stdout)["messages"]
    contents = [m["content"] for m in messages]
    assert not any(_unencodable(c) for c in contents)
    said = [m["content"] for m in messages if m["role"] == "assistant"]
    for case in engine.cases:
        if case.answer is not None:
            assert case.answer in said, case.name
    assert "still there?" in [m["content"] for m in messages if m["role"] == "user"]
    text = run_brim(["conversations", "export", conversation["id"]], data_dir=home, timeout=60)
    assert text.returncode == 0 and "Smile \U0001f600!" in text.stdout


def test_an_emoji_split_across_events_is_saved_whole_and_the_chat_resumes_and_exports(
    tmp_path: Path,
):
    home = tmp_path / "home"
    with hostile(FakeLlamaServer(n_ctx=4096)) as fake:
        flags = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
        raw(fake, *_openai_answer("Smile ", "\ud83d", "\ude00", " and half ", "\ud800"))
        first = run_brim(
            ["chat", "--headless", *flags], data_dir=home, stdin="say it\nand again\n", timeout=120
        )
        assert first.returncode == 0, first.stderr
        assert errors(first.events()) == []
        assert answered(first.events()) == "Smile \U0001f600 and half \ufffd" + OK
        (conversation,) = json.loads(
            run_brim(["conversations", "list", "--json"], data_dir=home, timeout=60).stdout
        )
        resumed = run_brim(
            ["chat", "--headless", *flags, "--conversation", conversation["id"]],
            data_dir=home,
            stdin="once more\n",
            timeout=120,
        )
    assert resumed.returncode == 0, resumed.stderr
    assert answered(resumed.events()) == OK
    export = run_brim(["conversations", "export", conversation["id"]], data_dir=home, timeout=60)
    assert export.returncode == 0, export.stderr
    assert "Smile \U0001f600 and half \ufffd" in export.stdout
