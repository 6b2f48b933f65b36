"""Error classification against the bodies the real engines send (from reference/fixtures)."""

from __future__ import annotations

import httpx
import pytest

from engine.providers.classify import (
    classify_http,
    classify_payload,
    classify_transport,
    safe_url,
)
from engine.providers.errors import (
    ContextOverflow,
    EngineUnreachable,
    ModelNotFound,
    ProtocolError,
    ServerError,
)
from engine.providers.sse import SseEvent, iter_sse

URL = "http://127.0.0.1:8080"

LLAMA_400 = (
    '{"error":{"code":400,"message":"request (9412 tokens) exceeds the available context size '
    '(8192 tokens), try increasing it","type":"exceed_context_size_error",'
    '"n_prompt_tokens":9412,"n_ctx":8192}}'
)
VLLM_NEW = (
    '{"error":{"message":"\'max_tokens\' or \'max_completion_tokens\' is too large: 8000. This '
    "model's maximum context length is 4096 tokens and your request has 2778 input tokens "
    '(8000 > 4096 - 2778).","type":"BadRequestError","param":null,"code":400}}'
)
VLLM_LEGACY = (
    '{"object":"error","message":"This model\'s maximum context length is 2048 tokens. However, '
    "you requested 2723 tokens (1699 in the messages, 1024 in the completion). Please reduce "
    'the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}'
)
SGLANG = (
    '{"object":"error","message":"The input (400013 tokens) is longer than the model\'s context '
    'length (262144 tokens).","type":"BadRequestError","param":null,"code":400}'
)
VLLM_V1 = (
    '{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model '
    "length of 4096. Make sure that `max_model_len` is no smaller than the number of text "
    'tokens.","type":"BadRequestError","code":400}}'
)

# vLLM 0.32's answer to a prompt of exactly max_model_len (tests/integration/
# test_real_vllm_parity.py sees it from the real server).
VLLM_FULL_WINDOW = (
    '{"error":{"message":"max_tokens must be at least 1, got 0. (parameter=max_tokens, '
    'value=0)","type":"BadRequestError","param":"max_tokens","code":400}}'
)


@pytest.mark.parametrize(
    ("body", "prompt", "window"),
    [
        (LLAMA_400, 9412, 8192),
        (VLLM_NEW, 2778, 4096),
        (VLLM_LEGACY, 1699, 2048),
        (SGLANG, 400013, 262144),
        (VLLM_V1, 5000, 4096),
        ('{"error": "the input length exceeds the context length"}', None, None),
        (VLLM_FULL_WINDOW, None, None),
    ],
)
def test_each_engines_overflow_body_is_a_context_overflow_with_its_numbers(body, prompt, window):
    error = classify_http(400, body, engine="engine", url=URL)

    assert isinstance(error, ContextOverflow)
    assert (error.prompt_tokens, error.window, error.status) == (prompt, window, 400)


def test_an_overflow_inside_a_200_stream_is_still_an_overflow():
    payload = {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "invalid_request_error",
    }

    error = classify_payload(payload, engine="llama-server", url=URL, status=200)

    assert isinstance(error, ContextOverflow)


def test_a_plain_bad_request_is_not_mistaken_for_an_overflow():
    error = classify_http(
        400,
        '{"error": {"message": "\\"n_probs\\" must be a non-negative integer"}}',
        engine="llama-server",
        url=URL,
    )

    assert type(error) is ServerError
    assert error.status == 400
    assert error.retryable is False


def test_a_404_is_a_missing_model_that_names_the_model_and_the_engine():
    error = classify_http(
        404,
        '{"error":"model \'llama9\' not found"}',
        engine="Ollama",
        url="http://127.0.0.1:11434",
        model="llama9",
    )

    assert isinstance(error, ModelNotFound)
    assert "'llama9'" in str(error) and "Ollama at http://127.0.0.1:11434" in str(error)


def test_a_5xx_is_a_server_error_even_without_a_json_body():
    error = classify_http(502, "<html>Bad Gateway</html>", engine="vLLM", url=URL)

    assert type(error) is ServerError
    assert error.status == 502


def test_messages_never_carry_credentials_from_the_url():
    url = "http://admin:hunter2@gpu-box:8000/?token=abc"

    error = classify_http(500, '{"error": "boom"}', engine="vLLM", url=url)

    assert "hunter2" not in str(error) and "token" not in str(error)
    assert "http://gpu-box:8000/" in str(error)
    assert safe_url("http://[::1]:8080/v1") == "http://[::1]:8080/v1"


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), EngineUnreachable),
        (httpx.ConnectTimeout("timed out"), EngineUnreachable),
        (httpx.ConnectError("[Errno -2] Name or service not known"), EngineUnreachable),
        (httpx.ReadTimeout("timed out"), ServerError),
        (httpx.RemoteProtocolError("peer closed connection"), ServerError),
        (httpx.UnsupportedProtocol("ftp"), EngineUnreachable),
        (ConnectionError("Failed to connect to Ollama"), EngineUnreachable),
        (httpx.DecodingError("bad gzip"), ProtocolError),
    ],
)
def test_transport_failures_map_to_the_error_a_user_can_act_on(exc, kind):
    error = classify_transport(exc, engine="Ollama", url="http://127.0.0.1:11434")

    assert type(error) is kind
    assert "http://127.0.0.1:11434" in str(error)


def test_an_unresolvable_host_says_so():
    error = classify_transport(
        httpx.ConnectError("[Errno -2] Name or service not known"),
        engine="vLLM",
        url="http://no-such-host:8000",
    )

    assert "does not resolve" in str(error)


async def _lines(*lines: str):
    for line in lines:
        yield line


@pytest.mark.anyio
async def test_sse_events_join_data_lines_skip_comments_and_keep_llama_error_lines():
    events = [
        e
        async for e in iter_sse(
            _lines(
                ": keep-alive",
                'data: {"a":',
                "data: 1}",
                "",
                'error: {"code":500,"message":"boom"}',
                "",
                "event: error",
                'data: {"message":"bad"}',
                "",
                "data: [DONE]",
            )
        )
    ]

    assert events == [
        SseEvent("message", '{"a":\n1}'),
        SseEvent("error", '{"code":500,"message":"boom"}'),
        SseEvent("error", '{"message":"bad"}'),
        SseEvent("message", "[DONE]"),
    ]


# Each engine's words for prompt + max_tokens above the window (and the prompt alone), from
# their sources: SGLang's TokenizerManager._validate_one_request, and vLLM's across versions
# (serving_engine.py before the renderer, renderers/params.py after it).
SGLANG_TOTAL = (
    "Requested token count exceeds the model's maximum context length of 4096 tokens. You "
    "requested a total of 4324 tokens: 3300 tokens from the input messages and 1024 tokens for "
    "the completion. Please reduce the number of tokens in the input messages or the "
    "completion to fit within the limit."
)
VLLM_PASSED = (
    "You passed 3073 input tokens and requested 1024 output tokens. However, the model's "
    "context length is only 4096 tokens, resulting in a maximum input length of 3072 tokens. "
    "Please reduce the length of the input prompt. (parameter=input_tokens, value=3073)"
)
VLLM_AT_LEAST = (
    "This model's maximum context length is 8192 tokens. However, you requested 64 output "
    "tokens and your prompt contains at least 8129 input tokens, for a total of at least 8193 "
    "tokens. Please reduce the length of the input prompt or the number of requested output "
    "tokens."
)
VLLM_CONTAINS = VLLM_AT_LEAST.replace("at least ", "").replace("8129", "8150")
VLLM_CHARACTERS = (
    "You passed 100000 input characters and requested 64 output tokens. However, the model's "
    "context length is only 8192 tokens, resulting in a maximum input length of 8128 tokens "
    "(at most 81280 characters). Please reduce the length of the input prompt."
)


@pytest.mark.parametrize(
    ("message", "numbers"),
    [
        (SGLANG_TOTAL, (3300, 4096, 1024, None)),
        (
            "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
            (5000, 4096, None, None),
        ),
        (VLLM_PASSED, (None, 4096, 1024, 3073)),  # where vLLM stopped counting, not the size
        (VLLM_AT_LEAST, (None, 8192, 64, 8129)),
        (VLLM_CONTAINS, (8150, 8192, 64, None)),
        (VLLM_CHARACTERS, (None, 8192, None, None)),  # characters are no token count
        (
            "This model's maximum context length is 2048 tokens. However, you requested 2723 "
            "tokens (1699 in the messages, 1024 in the completion). Please reduce the length "
            "of the messages or completion.",
            (1699, 2048, 1024, None),
        ),
        (
            "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum "
            "context length is 4096 tokens and your request has 2778 input tokens "
            "(8000 > 4096 - 2778).",
            (2778, 4096, 8000, None),
        ),
        (
            "This model's maximum context length is 8192 tokens. However, you requested 9000 "
            "tokens in the messages, Please reduce the length of the messages.",
            (9000, 8192, None, None),
        ),
    ],
)
def test_a_refusal_of_prompt_and_answer_room_carries_each_figure_the_engine_named(message, numbers):
    body = {"object": "error", "message": message, "type": "BadRequestError", "code": 400}

    error = classify_payload(body, engine="engine", url=URL, status=400)

    assert isinstance(error, ContextOverflow)
    figures = (error.prompt_tokens, error.window, error.output_tokens, error.prompt_floor)
    assert figures == numbers
