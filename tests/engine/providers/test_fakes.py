"""The fakes themselves: behaviour later suites rely on that no provider test exercises."""

from __future__ import annotations

import json

import httpx

from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeVllm, Reply, count_chat

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]


def _strict_chat(fake: FakeOllama, messages: list, **fields: bool) -> httpx.Response:
    body = {"model": "llama3.1:8b", "messages": messages, "stream": False, **fields}
    return httpx.post(f"{fake.url}/api/chat", json=body)


LONG = [*MESSAGES, {"role": "user", "content": "word " * 5000}]


def test_ollama_with_truncate_false_rejects_an_over_long_prompt_with_a_400():
    with FakeOllama(version="0.24.0") as fake:  # the old runners' words
        response = _strict_chat(fake, LONG, truncate=False)

    assert response.status_code == 400
    assert response.json()["error"] == "the input length exceeds the context length"


def test_ollama_0_30_with_truncate_false_passes_llama_servers_400_body_on_as_its_error():
    with FakeOllama(version="0.30.1") as fake:
        response = _strict_chat(fake, LONG, truncate=False)
        (request,) = fake.chat_requests

    assert response.status_code == 400
    inner = json.loads(response.json()["error"])["error"]
    assert inner["type"] == "exceed_context_size_error"
    assert (inner["n_prompt_tokens"], inner["n_ctx"]) == (request.prompt_tokens, 4096)
    assert "exceeds the available context size (4096 tokens)" in inner["message"]


def test_ollama_0_30_with_shift_off_refuses_what_dropping_messages_cannot_fit():
    with FakeOllama(version="0.33.0") as fake:
        response = _strict_chat(fake, LONG, shift=False)

    assert response.status_code == 400
    assert response.json()["error"].startswith(
        "the prompt is longer than the context length currently available to the model; "
    )


def test_ollama_before_0_12_6_ignores_truncate_and_cuts_anyway():
    with FakeOllama(version="0.5.7") as fake:
        response = _strict_chat(fake, LONG, truncate=False, shift=False)
        (request,) = fake.chat_requests

    assert response.status_code == 200
    assert request.truncated
    assert response.json()["prompt_eval_count"] <= 4096


def test_ollama_0_30_reloads_a_model_asked_for_with_another_shift():
    with FakeOllama(version="0.33.0") as old_runner_free:
        _strict_chat(old_runner_free, MESSAGES)
        _strict_chat(old_runner_free, MESSAGES, shift=False)
    with FakeOllama(version="0.24.0") as per_request:
        _strict_chat(per_request, MESSAGES)
        _strict_chat(per_request, MESSAGES, shift=False)

    assert (old_runner_free.reloads, per_request.reloads) == (1, 0)


def test_ollama_with_shift_off_ends_an_answer_at_the_window():
    near_full = [{"role": "user", "content": "word " * 4050}]
    assert 4060 <= count_chat(near_full) < 4096  # a few tokens short of the window
    with FakeOllama(version="0.33.0") as fake:
        fake.script_reply(" ".join(["more"] * 100))
        answer = _strict_chat(fake, near_full, shift=False).json()

    assert answer["done_reason"] == "length"
    assert answer["prompt_eval_count"] + answer["eval_count"] <= 4096


def test_ollama_truncation_keeps_the_system_prompt_and_the_last_message():
    history = [MESSAGES[0]] + [{"role": "user", "content": "x " * 300} for _ in range(10)]
    history.append({"role": "user", "content": "last question"})
    with FakeOllama(default_num_ctx=1000) as fake:
        answer = httpx.post(
            f"{fake.url}/api/chat",
            json={"model": "llama3.1:8b", "messages": history, "stream": False},
        ).json()

    kept = [history[0], *history[-4:]]  # a fourth filler would not fit
    assert count_chat(kept) <= 1000 < count_chat([history[0], *history[-5:]])
    assert answer["prompt_eval_count"] == count_chat(kept)
    assert fake.chat_requests[0].truncated


def test_llama_server_answers_without_streaming_with_usage_and_timings():
    with FakeLlamaServer() as fake:
        fake.script_reply("Hello!")
        answer = httpx.post(
            f"{fake.url}/v1/chat/completions", json={"model": "x", "messages": MESSAGES}
        ).json()

    assert answer["choices"][0]["message"]["content"] == "Hello!"
    assert answer["usage"]["prompt_tokens"] == fake.chat_requests[0].prompt_tokens
    assert answer["timings"]["cache_n"] == 0


def test_a_responder_answers_once_the_script_runs_out():
    with FakeVllm() as fake:
        fake.script_reply("scripted")
        fake.responder = lambda request: Reply(text=f"seen {len(request.body['messages'])}")
        texts = []
        for _ in range(2):
            answer = httpx.post(
                f"{fake.url}/v1/chat/completions",
                json={"model": fake.model, "messages": MESSAGES},
            ).json()
            texts.append(answer["choices"][0]["message"]["content"])

    assert texts == ["scripted", "seen 2"]


def test_every_chat_request_is_recorded_with_its_window_and_prompt_size():
    with FakeLlamaServer(n_ctx=4096, slots=2) as fake:
        httpx.post(f"{fake.url}/v1/chat/completions", json={"model": "x", "messages": MESSAGES})
        httpx.get(f"{fake.url}/props")

    chat, props = fake.requests
    assert (chat.path, chat.window, chat.prompt_tokens) == (
        "/v1/chat/completions",
        2048,
        count_chat(MESSAGES, add_special=True),
    )
    assert props.path == "/props" and props.body is None
    assert json.loads(json.dumps(chat.body)) == {"model": "x", "messages": MESSAGES}
