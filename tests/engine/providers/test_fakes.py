"""The fakes themselves: behaviour later suites rely on that no provider test exercises."""

from __future__ import annotations

import json

import httpx

from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeVllm, Reply, count_chat

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]


def test_ollama_with_truncate_false_rejects_an_over_long_prompt_with_a_400():
    long = [*MESSAGES, {"role": "user", "content": "word " * 5000}]
    with FakeOllama() as fake:
        response = httpx.post(
            f"{fake.url}/api/chat",
            json={"model": "llama3.1:8b", "messages": long, "truncate": False, "stream": False},
        )

    assert response.status_code == 400
    assert "exceeds the context length" in response.json()["error"]


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
