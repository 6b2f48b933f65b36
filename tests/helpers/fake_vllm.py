"""Fake vLLM and SGLang: the OpenAI-compatible chat of `fake_openai`, with what these two
engines report about the window (a server-wide `max_model_len` / `context_length`), how
they reject a prompt plus its output above it, and the shape of their errors.

    with FakeVllm(max_model_len=8192, lora={"sql-lora": "Qwen/Qwen2.5-7B-Instruct"}) as srv: ...
    with FakeSglang(context_length=32768) as srv: ...
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from tests.helpers import engine_sampling, fake_llama3
from tests.helpers.fake_http import Exchange, RecordedRequest, Reply
from tests.helpers.fake_openai import FakeOpenAIServer
from tests.helpers.fake_tokenizer import (
    render_chat,
    tokenize,
)

ErrorEnvelope = Literal["new", "flat"]


_GENERATION_FIELDS = ("repetition_penalty", "temperature", "top_k", "top_p", "min_p")


class FakeVllm(FakeOpenAIServer):
    """vLLM. `lora` maps adapter names to their base model: their cards carry `parent` and no
    `max_model_len` (the client must inherit the parent's). `error_envelope`: "new"
    (`{"error": {...}}`, v0.10.1+, refusing as vLLM 0.32 does) or "flat" (`{"object": "error",
    ...}`, before, refusing prompt + max_tokens above the window). `block_size`: the prefix
    cache reuses whole blocks (16 on a GPU, 128 on the CPU).

    What vLLM 0.32 does, checked against the real server (tests/integration/
    test_real_vllm_parity.py): a prompt above the window gets 400 naming the window and "at
    least window + 1" tokens (`param: input_tokens`); `max_tokens` above the window gets 400
    (`param: max_tokens`); a prompt plus `max_tokens` above it is answered, its output lowered
    to the room left, ending with `finish_reason: "length"`; a prompt of exactly the window
    leaves 0 to answer with, refused as `max_tokens` (400). The usage's
    `prompt_tokens_details` has `cached_tokens` and `created_cache_tokens` (whole blocks), a
    stream starts with `{"role": "assistant", "content": ""}` and its usage chunk leaves
    out what is null; the cards' `permission` entries and `/health` are the real ones."""

    name = "fake-vllm"
    owned_by = "vllm"
    role_delta: ClassVar[dict[str, Any]] = {"role": "assistant", "content": ""}
    finish_delta: ClassVar[dict[str, Any]] = {"content": ""}
    reasoning_key = "reasoning"  # vLLM's name since its rename of late 2025

    def __init__(
        self,
        model: str = "Qwen/Qwen2.5-7B-Instruct",
        max_model_len: int = 32768,
        *,
        lora: dict[str, str] | None = None,
        error_envelope: ErrorEnvelope = "new",
        prompt_tokens_details: bool = False,  # --enable-prompt-tokens-details
        block_size: int = 16,
        also_serves: tuple[str, ...] = (),  # more base models (vLLM serves one per process)
        token_delay: float = 0.0,
        auto_tool_choice: bool = True,  # --enable-auto-tool-choice --tool-call-parser …
    ) -> None:
        super().__init__(model, token_delay=token_delay)
        self.auto_tool_choice = auto_tool_choice
        self.max_model_len = max_model_len
        self.lora = dict(lora or {})
        self.error_envelope = error_envelope
        self.prompt_tokens_details = prompt_tokens_details
        self.block_size = block_size
        self.also_serves = also_serves
        self.route("POST", "/tokenize", self._tokenize)
        self.route("GET", "/health", self._health)

    def knows_model(self, model: Any) -> bool:
        return model == self.model or model in self.lora or model in self.also_serves

    def model_missing_body(self, model: Any) -> dict[str, Any]:
        aliases = ", ".join([self.model, *self.also_serves, *self.lora])
        message = f"The model `{model}` does not exist. Valid aliases: {aliases}."
        body = self.error_body(404, message, "NotFoundError")
        body.get("error", body)["param"] = "model"
        return body

    def window_for(self, body: dict[str, Any]) -> int:
        return self.max_model_len

    def applied_sampling(self, body: dict[str, Any]) -> dict[str, Any] | str | None:
        """vLLM's `--generation-config auto` (its default): the model folder's
        generation_config.json fills every sampling field the request leaves out
        (ModelConfig.get_diff_sampling_param: repetition_penalty, temperature, top_k, top_p,
        min_p), where the served model is a folder with one."""
        config = Path(self.model) / "generation_config.json"
        folder: dict[str, Any] = json.loads(config.read_text()) if config.is_file() else {}
        named = {k: folder[k] for k in _GENERATION_FIELDS if folder.get(k) is not None}
        return engine_sampling.vllm({**named, **{k: v for k, v in body.items() if v is not None}})

    def cached_tokens(self, tokens: list[int], body: dict[str, Any]) -> int:
        # vLLM reuses whole KV blocks, and never the prompt's last token.
        reused = min(super().cached_tokens(tokens, body), len(tokens) - 1)
        return max(reused, 0) // self.block_size * self.block_size

    def overflows(self, prompt: int, max_tokens: int | None, window: int) -> bool:
        if self.error_envelope == "flat":
            return prompt > window or (isinstance(max_tokens, int) and prompt + max_tokens > window)
        # Current builds lower max_tokens to the room left instead (fake_openai's _respond),
        # and refuse the 0 left by a prompt of the whole window.
        return prompt >= window or (isinstance(max_tokens, int) and max_tokens > window)

    def usage_details(self, cached: int, prompt: int) -> dict[str, Any] | None:
        """With --enable-prompt-tokens-details: what the prefix cache gave (`cached_tokens`)
        and the whole blocks of the prompt it took in (`created_cache_tokens`, the prompt's
        cached blocks after its prefill less those it read: `PrefillStats.finalize` in
        vllm/v1/metrics/stats.py)."""
        if not self.prompt_tokens_details:
            return None
        created = max(prompt // self.block_size * self.block_size - cached, 0)
        return {"cached_tokens": cached, "created_cache_tokens": created, "multimodal_tokens": None}

    def usage_body(self, usage: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        """An answer's usage carries every field, `completion_tokens_details` null; a stream's
        usage chunk leaves out what is null (`exclude_none` in chat_completion/serving.py)."""
        if not stream:
            return {**usage, "completion_tokens_details": None}
        return _without_none(usage)

    def tools_refusal(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if self.auto_tool_choice or not body.get("tools"):
            return None
        if body.get("tool_choice", "auto") not in ("auto", None):
            return None
        message = (
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
        )
        return 400, self.error_body(400, message, "BadRequestError")

    def error_body(self, status: int, message: str, type_: str) -> dict[str, Any]:
        error = {"message": message, "type": type_, "param": None, "code": status}
        if self.error_envelope == "flat":
            return {"object": "error", **error}
        return {"error": error}

    def overflow_body(self, prompt: int, max_tokens: int | None, window: int) -> dict[str, Any]:
        """vLLM's 400s, word for word: the flat envelope's older message for prompt +
        max_tokens above the window (the prompt's whole count), or vLLM 0.32's for
        `max_tokens` above it or the prompt alone above it (where its tokenizer stopped)."""
        requested = max_tokens or 0
        if self.error_envelope == "flat":
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {prompt + requested} tokens ({prompt} in the messages, {requested} "
                "in the completion). Please reduce the length of the messages or completion."
            )
            return self.error_body(400, message, "BadRequestError")
        if isinstance(max_tokens, int) and max_tokens > window:
            message = (
                f"max_tokens={max_tokens} cannot be greater than max_model_len={window}. "
                f"Please request fewer output tokens. (parameter=max_tokens, value={max_tokens})"
            )
            param = "max_tokens"
        elif prompt == window:
            # max_tokens lowered to the room left, 0, which SamplingParams refuses.
            message = "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)"
            param = "max_tokens"
        else:
            # vLLM tokenizes the prompt only up to one token past the window.
            message = (
                f"This model's maximum context length is {window} tokens. However, your "
                f"prompt contains at least {window + 1} input tokens, which exceeds this "
                "limit even without any output tokens. Please reduce the length of the "
                f"input prompt. (parameter=input_tokens, value={window + 1})"
            )
            param = "input_tokens"
        body = self.error_body(400, message, "BadRequestError")
        body["error"]["param"] = param
        return body

    def midstream_error(self, reply: Reply) -> bytes:
        payload = self.error_body(500, reply.error_message, "InternalServerError")
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def _models(self, ex: Exchange, req: RecordedRequest) -> None:
        cards = [
            {
                "id": name,
                "object": "model",
                "created": 1755800000,
                "owned_by": self.owned_by,
                "root": name,
                "parent": None,
                "max_model_len": self.max_model_len,
                "permission": [_permission(1)],
            }
            for name in (self.model, *self.also_serves)
        ]
        for name, parent in self.lora.items():
            cards.append(
                {
                    "id": name,
                    "object": "model",
                    "created": 1755800000,
                    "owned_by": self.owned_by,
                    "root": f"/adapters/{name}",
                    "parent": parent,
                    "permission": [_permission(2)],
                }
            )
        ex.send_json(200, {"object": "list", "data": cards})

    def _health(self, ex: Exchange, req: RecordedRequest) -> None:
        ex.send(200, b"")  # an empty 200 once the engine is up

    def _tokenize(self, ex: Exchange, req: RecordedRequest) -> None:
        body = req.body if isinstance(req.body, dict) else {}
        if not self.knows_model(body.get("model")):
            ex.send_json(404, self.model_missing_body(body.get("model")))
            return
        if "messages" in body:
            tokens = tokenize(
                render_chat(
                    body["messages"],
                    body.get("tools"),
                    add_generation_prompt=body.get("add_generation_prompt", True),
                )
            )
        else:
            tokens = tokenize(str(body.get("prompt", "")))
        ex.send_json(
            200,
            {
                "count": len(tokens),
                "max_model_len": self.max_model_len,
                "tokens": tokens,
                "token_strs": None,
            },
        )


def _permission(n: int) -> dict[str, Any]:
    """A card's `permission` entry, every field vLLM writes (`ModelPermission`)."""
    return {
        "id": f"modelperm-{n}",
        "object": "model_permission",
        "created": 1755800000,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }


def _without_none(value: dict[str, Any]) -> dict[str, Any]:
    return {
        key: _without_none(item) if isinstance(item, dict) else item
        for key, item in value.items()
        if item is not None
    }


class FakeSglang(FakeOpenAIServer):
    """SGLang: flat errors, cached tokens reported only when > 0 (with --enable-cache-report),
    a `/get_server_info` that holds an API key (Brim must never ask for it), its two
    refusals (the prompt alone, and prompt + max_tokens, each from a total equal to the
    window), and `/v1/tokenize` of text. It serves a Llama 3.1 model: prompts are counted
    with `fake_llama3` (cl100k under Llama 3.1's template), not the other doubles' Qwen template.
    `tokenize=False` is a build without `/v1/tokenize` (404)."""

    name = "fake-sglang"
    owned_by = "sglang"
    SECRET = "sk-fake-sglang-secret-key"

    def __init__(
        self,
        model: str = "meta-llama/Llama-3.1-8B-Instruct",
        context_length: int = 131072,
        *,
        cache_report: bool = False,
        token_delay: float = 0.0,
        tokenize: bool = True,
    ) -> None:
        super().__init__(model, token_delay=token_delay)
        self.context_length = context_length
        self.cache_report = cache_report
        self.route("GET", "/get_server_info", self._server_info)
        if tokenize:
            self.route("POST", "/v1/tokenize", self._tokenize)

    def window_for(self, body: dict[str, Any]) -> int:
        return self.context_length

    def applied_sampling(self, body: dict[str, Any]) -> dict[str, Any] | str | None:
        return engine_sampling.sglang(body)

    def prompt_tokens(self, body: dict[str, Any]) -> list[int]:
        return fake_llama3.tokenize(
            fake_llama3.render_chat(body.get("messages") or [], body.get("tools"))
        )

    def overflows(self, prompt: int, max_tokens: int | None, window: int) -> bool:
        # TokenizerManager._validate_one_request: `>=` on both checks.
        return prompt >= window or (isinstance(max_tokens, int) and prompt + max_tokens >= window)

    def usage_details(self, cached: int, prompt: int) -> dict[str, Any] | None:
        return {"cached_tokens": cached} if self.cache_report and cached > 0 else None

    def error_body(self, status: int, message: str, type_: str) -> dict[str, Any]:
        return {"object": "error", "message": message, "type": type_, "param": None, "code": status}

    def overflow_body(self, prompt: int, max_tokens: int | None, window: int) -> dict[str, Any]:
        if prompt >= window or not isinstance(max_tokens, int):
            message = (
                f"The input ({prompt} tokens) is longer than the model's context length "
                f"({window} tokens)."
            )
        else:
            message = (
                f"Requested token count exceeds the model's maximum context length of {window} "
                f"tokens. You requested a total of {prompt + max_tokens} tokens: {prompt} "
                f"tokens from the input messages and {max_tokens} tokens for the completion. "
                "Please reduce the number of tokens in the input messages or the completion "
                "to fit within the limit."
            )
        return self.error_body(400, message, "BadRequestError")

    def _tokenize(self, ex: Exchange, req: RecordedRequest) -> None:
        """`{"model", "prompt": str | [str], "add_special_tokens"}` to `{"tokens", "count",
        "max_model_len"}`: one count per text for a list (serving_tokenize.py)."""
        body = req.body if isinstance(req.body, dict) else {}
        prompt = body.get("prompt")
        special = body.get("add_special_tokens", True) is not False
        if isinstance(prompt, str):
            tokens: Any = fake_llama3.tokenize(prompt, add_special=special)
            count: Any = len(tokens)
        elif isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
            tokens = [fake_llama3.tokenize(p, add_special=special) for p in prompt]
            count = [len(t) for t in tokens]
        else:
            message = "Exactly one of 'prompt' or 'messages' must be provided."
            ex.send_json(400, self.error_body(400, message, "BadRequestError"))
            return
        ex.send_json(200, {"tokens": tokens, "count": count, "max_model_len": self.context_length})

    def _models(self, ex: Exchange, req: RecordedRequest) -> None:
        ex.send_json(
            200,
            {
                "object": "list",
                "data": [
                    {
                        "id": self.model,
                        "object": "model",
                        "created": 1755800000,
                        "owned_by": self.owned_by,
                        "root": self.model,
                        "parent": None,
                        "max_model_len": self.context_length,
                    }
                ],
            },
        )

    def _server_info(self, ex: Exchange, req: RecordedRequest) -> None:
        ex.send_json(200, {"context_length": None, "api_key": self.SECRET})
