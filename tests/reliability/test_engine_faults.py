"""Engine faults end to end: each failure an engine can have reaches the headless user as one
`error` event of its own kind, and the next line in the same process is answered."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.helpers.fake_http as fake_http
from tests.helpers.fake_engines import (
    FakeLlamaServer,
    FakeOllama,
    FakeServer,
    FakeSglang,
    FakeVllm,
    OllamaModel,
)
from tests.reliability.headless import Headless, answered, errors

OK = "Hello from the fake engine."


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _agent_file(home: Path, url: str, timeout_s: float) -> None:
    agents = home / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "short.toml").write_text(
        f'name = "short"\nprovider = "llamacpp"\nbase_url = "{url}"\nmodel = "fake"\n'
        f"request_timeout_s = {timeout_s}\n",
        encoding="utf-8",
    )


@pytest.fixture
def session(home: Path) -> Iterator[Callable[..., Headless]]:
    opened: list[Headless] = []

    def open_(*args: str) -> Headless:
        h = Headless(home, list(args))
        opened.append(h)
        return h

    yield open_
    for h in opened:
        assert h.close() == 0
        assert "Traceback" not in h.stderr


FAULTS = [
    ("http500", "server_error", "HTTP 500"),
    ("malformed", "protocol_error", "not JSON"),
    ("die", "server_error", "closed the connection"),
    ("error_event", "server_error", "mid-stream"),
    ("hang", "server_error", "stopped answering"),
]


def test_each_fault_of_a_llama_server_has_its_own_error_and_the_next_line_is_answered(
    home: Path, session: Callable[..., Headless]
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        _agent_file(home, fake.url, timeout_s=1.0)
        brim = session("--agent", "short")
        brim.ready()
        for fail, kind, says in FAULTS:
            fake.script_reply("one two three four five", fail=fail, fail_after=2)
            (error,) = errors(brim.turn(f"provoke {fail}"))
            assert error["kind"] == kind and says in error["message"], fail
            assert fake.url in error["message"]
            retried = brim.turn("try again")
            assert errors(retried) == [] and answered(retried) == OK, fail


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_unreachable_and_a_line_after_the_engine_starts_is_answered(
    session: Callable[..., Headless], monkeypatch: pytest.MonkeyPatch
):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    brim = session("--provider", "llamacpp", "--model", "fake", "--base-url", url)
    started = brim.ready()
    assert [e["kind"] for e in errors(started)] == ["unreachable"]
    (refused,) = errors(brim.turn("is anyone there?"))
    assert refused["kind"] == "unreachable" and url in refused["message"]

    class OnThatPort(fake_http._QuietServer):
        def __init__(self, address: Any, handler: Any) -> None:
            super().__init__(("127.0.0.1", port), handler)

    monkeypatch.setattr(fake_http, "_QuietServer", OnThatPort)
    with FakeLlamaServer(n_ctx=4096):
        retried = brim.turn("is anyone there now?")
    assert errors(retried) == [] and answered(retried) == OK


ENGINES: dict[str, tuple[Callable[[], FakeServer], list[str]]] = {
    "llama-server": (lambda: FakeLlamaServer(n_ctx=4096), ["llamacpp", "fake"]),
    "llama-server legacy": (
        lambda: FakeLlamaServer(n_ctx=4096, overflow_style="legacy400"),
        ["llamacpp", "fake"],
    ),
    "llama-server sse error": (
        lambda: FakeLlamaServer(n_ctx=4096, overflow_style="sse_error_field"),
        ["llamacpp", "fake"],
    ),
    "llama-server sse data": (
        lambda: FakeLlamaServer(n_ctx=4096, overflow_style="sse_data_error"),
        ["llamacpp", "fake"],
    ),
    "vllm": (lambda: FakeVllm(max_model_len=4096), ["vllm", "Qwen/Qwen2.5-7B-Instruct"]),
    "vllm legacy": (
        lambda: FakeVllm(max_model_len=4096, error_envelope="flat"),
        ["vllm", "Qwen/Qwen2.5-7B-Instruct"],
    ),
    "sglang": (
        lambda: FakeSglang(context_length=4096),
        ["sglang", "meta-llama/Llama-3.1-8B-Instruct"],
    ),
    "ollama": (
        lambda: FakeOllama([OllamaModel("llama3.1:8b", context_length=8192)]),
        ["ollama", "llama3.1:8b"],
    ),
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_an_overflow_the_recovery_cannot_fix_is_context_overflow_and_the_next_line_works(
    engine: str, session: Callable[..., Headless]
):
    make, (provider, model) = ENGINES[engine]
    with make() as fake:
        brim = session("--provider", provider, "--model", model, "--base-url", fake.url)
        brim.ready()
        # Refused twice: the first refusal is recovered from (compact or trim, retry once).
        fake.script_reply(fail="overflow")
        fake.script_reply(fail="overflow")
        events = brim.turn("a prompt the engine calls too long")
        (error,) = errors(events)
        assert error["kind"] == "context_overflow", error
        retried = brim.turn("a short one")
    assert errors(retried) == [] and answered(retried) == OK
