"""The vLLM double (tests/helpers/fake_vllm.py) answers as the real vLLM does (issue 43).

The same requests go to the real vLLM (conftest `vllm_server`: SmolLM2 served as `smol`,
`--max-model-len 2048 --enable-prompt-tokens-details --enable-prefix-caching`, no tool
calling) and to a `FakeVllm` started the same way, and the test compares what a client reads
of the answers: status codes; the error envelope (its keys, type, param, code, and the
message's wording with its numbers masked); the usage's fields and their types; the finish
reason; the stream's chunks; the fields of `/tokenize` and `/v1/models`. Every field the
double writes must be one the real server writes.

Token counts differ by design (the double counts with another vocabulary), so the counts are
not compared; a prompt that must be a given size is filled to it by each server's own
`/tokenize`, as Brim sizes its requests. Where the two differ, the double is wrong: vLLM's
source (0.32.0, the build `make vllm-setup` installs) is the final word.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench._vllm_server import RealVllmServer
from tests.helpers.fake_http import RecordedRequest, Reply
from tests.helpers.fake_vllm import FakeVllm
from tests.integration.conftest import VLLM_SERVED_NAME

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(900)]

WINDOW = 2048  # the shared server's --max-model-len
CPU_BLOCK = 128  # vLLM's KV block on the CPU (vllm/platforms/cpu.py)
CAPITAL = "What is the capital of France?"
CAPITAL_ANSWER = "The capital of France is Paris."  # what SmolLM2 answers, greedy
ESSAY = (
    "Rome began as a cluster of villages on seven hills above the Tiber, and over the "
    "centuries its people built roads, aqueducts and laws that outlasted the city's own "
    "rule. The republic gave way to an empire that stretched from Britain to Egypt, and "
    "its language, its calendar and its buildings are still with us today. "
) * 4


@pytest.fixture(scope="module")
def double() -> Iterator[FakeVllm]:
    """The double as the shared server was started: the served name, the window, the
    prompt-token details, the CPU's block, no tool calling. It answers as SmolLM2 did the
    capital question, and at length anything else (so an answer can run into its cap)."""
    with FakeVllm(
        VLLM_SERVED_NAME,
        max_model_len=WINDOW,
        prompt_tokens_details=True,
        block_size=CPU_BLOCK,
        auto_tool_choice=False,
    ) as fake:
        fake.responder = _answer
        yield fake


def _answer(request: RecordedRequest) -> Reply:
    body = request.body if isinstance(request.body, dict) else {}
    last = (body.get("messages") or [{}])[-1].get("content")
    return Reply(text=CAPITAL_ANSWER if last == CAPITAL else ESSAY)


class Both:
    """One client for both servers: every call goes to the real server, then the double."""

    def __init__(self, real: str, fake: str) -> None:
        self.urls = (real, fake)
        self.client = httpx.Client(timeout=httpx.Timeout(300, connect=5), trust_env=False)

    def post(self, path: str, body: dict[str, Any]) -> tuple[httpx.Response, httpx.Response]:
        real, fake = (self.client.post(url + path, json=body) for url in self.urls)
        return real, fake

    def get(self, path: str) -> tuple[httpx.Response, httpx.Response]:
        real, fake = (self.client.get(url + path) for url in self.urls)
        return real, fake

    def count(self, url: str, messages: list[dict[str, Any]]) -> int:
        body = {"model": VLLM_SERVED_NAME, "messages": messages, "add_generation_prompt": True}
        answer = self.client.post(url + "/tokenize", json=body)
        answer.raise_for_status()
        count = answer.json()["count"]
        assert isinstance(count, int)
        return count

    def filled(self, url: str, size: int, ask: str) -> list[dict[str, Any]]:
        """Messages that this server counts at exactly `size` tokens: reference notes in the
        system message, then one " ok" at a time, and the user's `ask` last."""

        def messages(lines: int, pad: int) -> list[dict[str, Any]]:
            notes = "\n".join(
                f"Note {i}: the bridge over river {i % 7} was rebuilt in year {1200 + i}."
                for i in range(lines)
            )
            system = "Reference notes:\n" + notes + " ok" * pad
            return [{"role": "system", "content": system}, {"role": "user", "content": ask}]

        lines = 0
        while self.count(url, messages(lines + 8, 0)) < size:
            lines += 8
        while self.count(url, messages(lines + 1, 0)) <= size:
            lines += 1
        pad = 0
        while (counted := self.count(url, messages(lines, pad))) < size:
            pad += 1
        assert counted == size, f"{url} counts {counted} where {size} was wanted"
        return messages(lines, pad)


@pytest.fixture(scope="module")
def both(vllm_server: RealVllmServer, double: FakeVllm) -> Iterator[Both]:
    pair = Both(vllm_server.url, double.url)
    try:
        yield pair
    finally:
        pair.client.close()


def chat(messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"model": VLLM_SERVED_NAME, "messages": messages, "temperature": 0, **fields}


STREAM = {"stream": True, "stream_options": {"include_usage": True}}


# -- what is compared -------------------------------------------------------------------


def masked(text: Any) -> Any:
    """The wording without its numbers (each server counts with its own vocabulary)."""
    return re.sub(r"\d+", "N", text) if isinstance(text, str) else text


def error_shape(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return {
        "status": response.status_code,
        "content-type": response.headers.get("content-type"),
        "keys": sorted(body),
        "error keys": sorted(error),
        "type": error.get("type"),
        "param": error.get("param"),
        "code": error.get("code"),
        "message": masked(error.get("message")),
    }


def shape(value: Any) -> Any:
    """A value's fields and their types, all the way down (lists by their first item)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def beyond(fake: dict[str, Any], real: dict[str, Any]) -> set[str]:
    """Fields the double writes that the real server does not."""
    return set(fake) - set(real)


def events(response: httpx.Response) -> list[Any]:
    """The stream's `data:` payloads in order: chunks as dicts, `[DONE]` as text."""
    out: list[Any] = []
    for line in response.text.splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def stream_shape(response: httpx.Response) -> dict[str, Any]:
    """What a client reads of a stream, beyond its text."""
    payloads = events(response)
    chunks = [p for p in payloads if isinstance(p, dict)]
    answering = [c for c in chunks if c.get("choices")]
    finishing = [c["choices"][0]["finish_reason"] for c in answering]
    with_usage = [c for c in chunks if "usage" in c]
    return {
        "status": response.status_code,
        "content-type": response.headers.get("content-type", "").split(";")[0],
        "ends with [DONE]": payloads[-1:] == ["[DONE]"],
        "objects": sorted({c.get("object") for c in chunks}),
        "first delta": answering[0]["choices"][0]["delta"],
        # The finish reason once, on the last chunk of the answer (vLLM puts it on the
        # last piece of text, or on an empty one), its delta only text.
        "finish reasons": [f for f in finishing if f is not None],
        "finishes last": finishing[-1] is not None,
        "last delta": {
            k: type(v).__name__ for k, v in answering[-1]["choices"][0]["delta"].items()
        },
        # The usage once, on a chunk of its own after the answer, with no choices.
        "usage chunks": len(with_usage),
        "usage last": bool(with_usage) and with_usage[-1] is chunks[-1],
        "usage choices": with_usage[-1]["choices"] if with_usage else None,
        "usage": shape(with_usage[-1]["usage"]) if with_usage else None,
    }


def chunk_fields_beyond(fake: httpx.Response, real: httpx.Response) -> set[str]:
    real_chunks = [c for c in events(real) if isinstance(c, dict)]
    fake_chunks = [c for c in events(fake) if isinstance(c, dict)]
    top = set().union(*map(set, real_chunks))
    choice = set().union(*(set(c["choices"][0]) for c in real_chunks if c["choices"]))
    out = set().union(*(set(c) - top for c in fake_chunks))
    return out | set().union(*(set(c["choices"][0]) - choice for c in fake_chunks if c["choices"]))


# -- answers ----------------------------------------------------------------------------


def test_an_answer_has_the_real_servers_fields_usage_and_finish(both: Both):
    real, fake = both.post(
        "/v1/chat/completions", chat([{"role": "user", "content": CAPITAL}], max_tokens=16)
    )
    assert (real.status_code, fake.status_code) == (200, 200), (real.text, fake.text)
    r, f = real.json(), fake.json()
    assert r["choices"][0]["message"]["content"] == CAPITAL_ANSWER  # what the double says
    assert beyond(f, r) == set()
    assert beyond(f["choices"][0], r["choices"][0]) == set()
    assert beyond(f["choices"][0]["message"], r["choices"][0]["message"]) == set()
    assert (f["object"], f["model"]) == (r["object"], r["model"]) == ("chat.completion", "smol")
    assert f["choices"][0]["finish_reason"] == r["choices"][0]["finish_reason"] == "stop"
    assert shape(f["usage"]) == shape(r["usage"])
    for usage in (r["usage"], f["usage"]):
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert isinstance(usage["prompt_tokens_details"]["cached_tokens"], int)


def test_a_streamed_answer_has_the_real_servers_chunks_and_usage(both: Both):
    messages = [{"role": "user", "content": CAPITAL}]
    real, fake = both.post("/v1/chat/completions", chat(messages, max_tokens=16, **STREAM))
    assert stream_shape(fake) == stream_shape(real)
    assert stream_shape(real)["finish reasons"] == ["stop"]
    assert stream_shape(real)["usage"]["prompt_tokens_details"]["cached_tokens"] == "int"
    assert chunk_fields_beyond(fake, real) == set()
    # Without include_usage: no usage anywhere.
    real, fake = both.post("/v1/chat/completions", chat(messages, max_tokens=16, stream=True))
    assert stream_shape(fake) == stream_shape(real)
    assert stream_shape(real)["usage chunks"] == 0


def test_the_prompt_cache_is_reported_in_whole_blocks_it_read_and_wrote(both: Both):
    """The same prompt twice: the first writes its whole blocks to the cache
    (`created_cache_tokens`), the second reads them (`cached_tokens`)."""
    marker = uuid.uuid4().hex  # first, so no earlier request shares a block with it
    text = f"{marker} Remember these: " + ", ".join(f"pear {i}" for i in range(90))
    body = chat([{"role": "user", "content": text}], max_tokens=2)
    details: list[list[dict[str, Any]]] = [[], []]
    for _ in range(2):
        for i, answer in enumerate(both.post("/v1/chat/completions", body)):
            assert answer.status_code == 200, answer.text
            details[i].append(answer.json()["usage"]["prompt_tokens_details"])
    for first, second in details:
        assert first["cached_tokens"] == 0 and second["created_cache_tokens"] == 0
        assert second["cached_tokens"] == first["created_cache_tokens"] > 0
        assert first["created_cache_tokens"] % CPU_BLOCK == 0


def test_a_prompt_that_fits_with_max_tokens_past_the_window_is_answered_up_to_the_window(
    both: Both,
):
    """vLLM lowers max_tokens to the room left rather than refusing: the answer fills the
    window exactly and ends with "length"."""
    ask = "Write a long essay about the history of Rome, with many paragraphs."
    size = WINDOW - 16
    bodies = [chat(both.filled(url, size, ask), max_tokens=64) for url in both.urls]
    answers = [
        both.client.post(url + "/v1/chat/completions", json=body)
        for url, body in zip(both.urls, bodies, strict=True)
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        usage = answer.json()["usage"]
        assert usage["prompt_tokens"] == size
        assert usage["completion_tokens"] == WINDOW - size
        assert answer.json()["choices"][0]["finish_reason"] == "length"
    streamed = [
        both.client.post(url + "/v1/chat/completions", json={**body, **STREAM})
        for url, body in zip(both.urls, bodies, strict=True)
    ]
    real, fake = streamed
    assert stream_shape(fake) == stream_shape(real)
    assert stream_shape(real)["finish reasons"] == ["length"]


# -- refusals ---------------------------------------------------------------------------


def test_a_prompt_over_the_window_is_refused_as_vllm_refuses_it(both: Both):
    """Streamed or not: a 400 before any stream starts, naming `input_tokens`."""
    messages = [{"role": "user", "content": "apple " * 2100}]  # over 2,048 in both
    for extra in ({}, STREAM):
        real, fake = both.post("/v1/chat/completions", chat(messages, max_tokens=8, **extra))
        assert error_shape(fake) == error_shape(real)
        assert (real.status_code, real.json()["error"]["param"]) == (400, "input_tokens")


def test_max_tokens_above_the_window_is_refused_as_vllm_refuses_it(both: Both):
    messages = [{"role": "user", "content": CAPITAL}]
    for extra in ({}, STREAM):
        real, fake = both.post("/v1/chat/completions", chat(messages, max_tokens=5000, **extra))
        assert error_shape(fake) == error_shape(real)
        assert (real.status_code, real.json()["error"]["param"]) == (400, "max_tokens")


def test_a_prompt_of_exactly_the_window_is_refused_for_leaving_no_output(both: Both):
    """No token is left to answer with: vLLM lowers max_tokens to 0 and refuses that, with
    or without a max_tokens in the request."""
    ask = "Say hello."
    bodies = [chat(both.filled(url, WINDOW, ask)) for url in both.urls]
    real, fake = (
        both.client.post(url + "/v1/chat/completions", json=body)
        for url, body in zip(both.urls, bodies, strict=True)
    )
    assert error_shape(fake) == error_shape(real)
    assert (real.status_code, real.json()["error"]["param"]) == (400, "max_tokens")


def test_an_unknown_model_is_404_naming_the_served_ones(both: Both):
    messages = [{"role": "user", "content": CAPITAL}]
    real, fake = both.post("/v1/chat/completions", {"model": "nope", "messages": messages})
    assert error_shape(fake) == error_shape(real)
    assert (real.status_code, real.json()["error"]["param"]) == (404, "model")
    real, fake = both.post("/tokenize", {"model": "nope", "messages": messages})
    assert error_shape(fake) == error_shape(real)
    assert real.status_code == 404


def test_what_this_server_was_not_started_for_is_refused_in_its_words(both: Both):
    """Tools without `--enable-auto-tool-choice` (Brim reads the flag's name in the text),
    and a sampling setting vLLM refuses."""
    messages = [{"role": "user", "content": CAPITAL}]
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
    real, fake = both.post("/v1/chat/completions", chat(messages, max_tokens=8, tools=[tool]))
    assert error_shape(fake) == error_shape(real)
    assert "--enable-auto-tool-choice" in real.json()["error"]["message"]
    real, fake = both.post("/v1/chat/completions", chat(messages, max_tokens=8, top_k=-2))
    assert error_shape(fake) == error_shape(real)
    assert real.status_code == 400


# -- what Brim reads besides the chat -----------------------------------------------------


def test_tokenize_answers_with_the_real_servers_fields(both: Both):
    messages = [{"role": "user", "content": CAPITAL}]
    body = {"model": VLLM_SERVED_NAME, "messages": messages, "add_generation_prompt": True}
    real, fake = both.post("/tokenize", body)
    assert (real.status_code, fake.status_code) == (200, 200)
    assert shape(fake.json()) == shape(real.json())
    for answer in (real.json(), fake.json()):
        assert answer["max_model_len"] == WINDOW
        assert answer["count"] == len(answer["tokens"])


def test_the_model_cards_have_the_real_servers_fields(both: Both):
    real, fake = both.get("/v1/models")
    assert (real.status_code, fake.status_code) == (200, 200)
    assert shape(fake.json()) == shape(real.json())
    for listing in (real.json(), fake.json()):
        (card,) = listing["data"]
        assert (card["id"], card["owned_by"], card["max_model_len"]) == ("smol", "vllm", WINDOW)
        assert card["parent"] is None


def test_the_other_paths_brim_may_meet_answer_alike(both: Both):
    """`/api/version` (Brim asks it to tell Ollama behind a /v1) is FastAPI's 404; `/health`
    (what a start-up waits on) is an empty 200."""
    real, fake = both.get("/api/version")
    assert (
        (fake.status_code, fake.json())
        == (real.status_code, real.json())
        == (
            404,
            {"detail": "Not Found"},
        )
    )
    real, fake = both.get("/health")
    assert (fake.status_code, fake.content) == (real.status_code, real.content) == (200, b"")
