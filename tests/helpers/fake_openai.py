"""Fake OpenAI-compatible engines: llama-server, vLLM and SGLang.

They share `/v1/chat/completions` (SSE `data:` chunks, tool-call deltas, a usage chunk when
`stream_options.include_usage`, then `data: [DONE]`; or one JSON answer without `stream`)
and differ where the real engines differ (engines.md): what they report about the window,
how they report cached prompt tokens, and the shape of their errors.

    with FakeLlamaServer(n_ctx=4096, slots=2) as srv: ...        # per slot: 2048
    with FakeVllm(max_model_len=8192, lora={"sql-lora": "Qwen/Qwen2.5-7B-Instruct"}) as srv: ...
    with FakeSglang(context_length=32768) as srv: ...
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar, Literal

from tests.helpers import engine_sampling, fake_reasoning, fake_tokenizer, smollm2_vocab
from tests.helpers.fake_http import (
    Exchange,
    FakeServer,
    RecordedRequest,
    Reply,
    play,
)
from tests.helpers.fake_kv_pool import POOL_MESSAGE, KvPool
from tests.helpers.fake_slot_cache import SlotCache, completion
from tests.helpers.fake_tokenizer import common_prefix


class FakeOpenAIServer(FakeServer):
    owned_by = "openai-compatible"
    chat_path = "/v1/chat/completions"
    not_found = (b'{"detail":"Not Found"}', "application/json")  # FastAPI (vLLM, SGLang)
    # The served model's tokenizer and template: `tokenize`, `render_chat`, `count_text`.
    vocab: Any = fake_tokenizer
    # The delta of a stream's first chunk, and of the chunk that carries the finish reason
    # of an answer without tool calls.
    role_delta: ClassVar[dict[str, Any]] = {"role": "assistant", "content": None}
    finish_delta: ClassVar[dict[str, Any]] = {}
    reasoning_key = "reasoning_content"  # where `Reply.reasoning` streams (fake_reasoning.py)

    def __init__(self, model: str, *, token_delay: float = 0.0) -> None:
        super().__init__(token_delay=token_delay)
        self.model = model
        # The server's `--api-key`: requests to the guarded paths without
        # `Authorization: Bearer <key>` get the engine's 401.
        self.api_key: str | None = None
        self._last_prompt: list[int] = []
        self.pool: KvPool | None = None  # llama-server's KV cells (tests/helpers/fake_kv_pool.py)
        self.reasoning_parser = True  # False: a <think> block stays in the content
        self.route("GET", "/v1/models", self._models)
        self.route("POST", self.chat_path, self._chat)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to(self.chat_path)

    # -- what each engine overrides -------------------------------------------------------

    def guarded(self, path: str) -> bool:
        """Whether `--api-key` protects `path` (vLLM: everything under /v1)."""
        return path.startswith("/v1")

    def unauthorized_body(self) -> dict[str, Any]:
        return {"error": "Unauthorized"}  # vLLM's AuthenticationMiddleware, and SGLang's

    def refuse(self, exchange: Exchange, request: RecordedRequest) -> bool:
        if self.api_key is None or not self.guarded(request.path):
            return False
        if request.headers.get("authorization") == f"Bearer {self.api_key}":
            return False
        exchange.send_json(401, self.unauthorized_body())
        return True

    def _models(self, ex: Exchange, req: RecordedRequest) -> None:
        raise NotImplementedError

    def knows_model(self, model: Any) -> bool:
        return model == self.model

    def window_for(self, body: dict[str, Any]) -> int:
        raise NotImplementedError

    def prompt_tokens(self, body: dict[str, Any]) -> list[int]:
        return self.vocab.tokenize(
            self.vocab.render_chat(body.get("messages") or [], body.get("tools"))
        )

    def cached_tokens(self, tokens: list[int], body: dict[str, Any]) -> int:
        """Prompt-cache reuse: the prefix shared with the previous prompt."""
        cached = min(common_prefix(tokens, self._last_prompt), max(len(tokens) - 1, 0))
        self._last_prompt = tokens
        return cached

    def overflows(self, prompt: int, max_tokens: int | None, window: int) -> bool:
        return prompt > window

    def error_body(self, status: int, message: str, type_: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": type_, "param": None, "code": status}}

    def overflow_body(self, prompt: int, max_tokens: int | None, window: int) -> dict[str, Any]:
        raise NotImplementedError

    def model_missing_body(self, model: Any) -> dict[str, Any]:
        return self.error_body(404, f"The model `{model}` does not exist.", "NotFoundError")

    def usage_details(self, cached: int, prompt: int) -> dict[str, Any] | None:
        """`prompt_tokens_details` as this engine reports it (None: left out)."""
        return None

    def usage_body(self, usage: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        """The usage object as this engine writes it in an answer or a stream's last chunk."""
        return usage

    def timings(self, prompt: int, cached: int, completion: int) -> dict[str, Any] | None:
        return None

    def send_overflow(
        self, ex: Exchange, body: dict[str, Any], prompt: int, max_tokens: int | None, window: int
    ) -> None:
        ex.send_json(400, self.overflow_body(prompt, max_tokens, window))

    def midstream_error(self, reply: Reply) -> bytes:
        payload = self.error_body(500, reply.error_message, "InternalServerError")
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def before_chat(self, ex: Exchange) -> bool:
        """A chance to refuse every chat (llama-server while loading). True: go on."""
        return True

    # -- the chat endpoint ----------------------------------------------------------------

    def tools_refusal(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """(status, body) when this server, as started, refuses a request carrying tools."""
        return None

    def applied_sampling(self, body: dict[str, Any]) -> dict[str, Any] | str | None:
        """What this engine samples with for `body` (tests/helpers/engine_sampling.py), or
        the message of its 400 refusing it; None: not modelled."""
        return None

    def _chat(self, ex: Exchange, req: RecordedRequest) -> None:
        if not self.before_chat(ex):
            return
        body = req.body if isinstance(req.body, dict) else {}
        if not self.knows_model(body.get("model")):
            ex.send_json(404, self.model_missing_body(body.get("model")))
            return
        refusal = self.tools_refusal(body)
        if refusal is not None:
            ex.send_json(*refusal)
            return
        applied = self.applied_sampling(body)
        if isinstance(applied, str):
            ex.send_json(400, self.error_body(400, applied, "BadRequestError"))
            return
        req.sampling = applied
        tokens = self.prompt_tokens(body)
        prompt = len(tokens)
        window = self.window_for(body)
        req.prompt_tokens = req.evaluated_tokens = prompt
        req.window = window
        reply = self.next_reply(req)
        req.reply = reply
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if reply.fail == "http500":
            ex.send_json(500, self.error_body(500, reply.error_message, "InternalServerError"))
            return
        if reply.fail == "overflow" or self.overflows(prompt, max_tokens, window):
            req.rejected = True
            self.send_overflow(ex, body, prompt, max_tokens, window)
            return
        cached = self.cached_tokens(tokens, body)
        key = id(req)
        if self.pool is not None and not self.pool.admit(key, prompt):
            self.pool.release(key)
            self.send_pool_error(ex, req, stream=bool(body.get("stream")))
            return
        try:
            self._respond(ex, req, body, reply, prompt, window, max_tokens, cached)
        finally:
            if self.pool is not None:
                self.pool.release(key)

    def pool_error_event(self, req: RecordedRequest) -> bytes:
        req.pool_failed = True
        return (
            b"data: "
            + json.dumps(self.error_body(500, POOL_MESSAGE, "server_error")).encode()
            + b"\n\n"
        )

    def send_pool_error(self, ex: Exchange, req: RecordedRequest, *, stream: bool) -> None:
        """The shared pool ran dry: a 500, or (streaming) the error as the stream's event."""
        if not stream:
            req.pool_failed = True
            ex.send_json(500, self.error_body(500, POOL_MESSAGE, "server_error"))
            return
        ex.start_stream("text/event-stream")
        ex.write(self.pool_error_event(req))
        ex.end_stream()

    def _respond(
        self,
        ex: Exchange,
        req: RecordedRequest,
        body: dict[str, Any],
        reply: Reply,
        prompt: int,
        window: int,
        max_tokens: Any,
        cached: int,
    ) -> None:
        key = id(req)
        thinks = fake_reasoning.openai_thinks(body)
        thought, pieces = fake_reasoning.pieces(reply, thinks=thinks, parser=self.reasoning_parser)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        room = window - prompt
        limit = min(x for x in (max_tokens, room) if isinstance(x, int))
        vocab = self.vocab
        thought, pieces, cut = fake_reasoning.capped(
            thought, pieces, max(limit, 0), vocab.count_text, vocab.head_tokens
        )
        finish = "length" if cut else finish
        completion = vocab.count_text("".join(thought + pieces)) + sum(
            self.vocab.count_text(c.name + " " + json.dumps(c.arguments)) for c in reply.tool_calls
        )
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        details = self.usage_details(cached, prompt)
        if details is not None:
            usage["prompt_tokens_details"] = details
        timings = self.timings(prompt, cached, completion)
        calls = [
            {
                "id": call.id or f"call_{i}_{int(time.time() * 1000) % 100000}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
        base = {
            "id": "chatcmpl-fake",
            "created": 1755800000,
            "model": body.get("model"),
        }
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
            if thought:
                message[self.reasoning_key] = "".join(thought)
            if calls:
                message["tool_calls"] = calls
            answer = {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": self.usage_body(usage, stream=False),
            }
            if timings is not None:
                answer["timings"] = timings
            ex.send_json(200, answer)
            return

        def event(obj: dict[str, Any]) -> bytes:
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        ex.start_stream("text/event-stream")
        ex.write(event(chunk(dict(self.role_delta))))
        for text in thought:
            ex.write(event(chunk({self.reasoning_key: text})))
        if not play(
            self,
            ex,
            reply,
            pieces,
            piece=lambda text: event(chunk({"content": text})),
            error_event=lambda: self.midstream_error(reply),
            malformed=b'data: {"choices": [\n\n',
            stop=lambda text: (
                None
                if self.pool is None or self.pool.grow(key, self.vocab.count_text(text))
                else self.pool_error_event(req)
            ),
        ):
            return
        for i, call in enumerate(calls):
            # Like the real engines: the id and name first, then the arguments in fragments.
            head = {"index": i, "id": call["id"], "type": "function"}
            head["function"] = {"name": call["function"]["name"], "arguments": ""}
            ex.write(event(chunk({"tool_calls": [head]})))
            arguments = call["function"]["arguments"]
            for start in range(0, len(arguments), 7):
                fragment = {"index": i, "function": {"arguments": arguments[start : start + 7]}}
                ex.write(event(chunk({"tool_calls": [fragment]})))
        last = chunk({} if calls else dict(self.finish_delta), finish)
        include_usage = (body.get("stream_options") or {}).get("include_usage")
        if not include_usage and timings is not None:
            last["timings"] = timings
        ex.write(event(last))
        if include_usage:
            usage_chunk: dict[str, Any] = {
                **base,
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": self.usage_body(usage, stream=True),
            }
            if timings is not None:
                usage_chunk["timings"] = timings
            ex.write(event(usage_chunk))
        ex.write(b"data: [DONE]\n\n")
        ex.end_stream()


AUTO_SLOTS = 4  # llama-server's slots when started without --parallel (then unified)

OverflowStyle = Literal["http400", "legacy400", "sse_error_field", "sse_data_error"]


class FakeLlamaServer(FakeOpenAIServer):
    """llama-server. `n_ctx` is `-c`, `slots` is `-np`. The default is the real server's
    without `--parallel`: 4 slots over one unified pool of n_ctx cells, each slot reporting
    all of n_ctx, and every request in flight failing together when they outgrow the pool
    (tests/helpers/fake_kv_pool.py). An explicit `slots` without `kv_unified` gives each slot
    n_ctx // slots of its own.

    overflow_style (a prompt of at least the slot's window):
      "http400"          400 `exceed_context_size_error` with n_prompt_tokens / n_ctx (now)
      "legacy400"        400 with an older message and no numbers
      "sse_error_field"  200, then an SSE line `error: {...}` (before late 2025)
      "sse_data_error"   200, then `data: {"error": {...}}`
    """

    name = "fake-llama-server"
    owned_by = "llamacpp"
    vocab = smollm2_vocab  # the model it serves: SmolLM2's vocabulary and template
    not_found = (
        b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}',
        "application/json; charset=utf-8",
    )

    # What llama-server's `--api-key` leaves open (its public endpoints).
    PUBLIC_PATHS = frozenset({"/health", "/v1/health", "/models", "/v1/models", "/api/tags"})

    def guarded(self, path: str) -> bool:
        return path not in self.PUBLIC_PATHS

    def unauthorized_body(self) -> dict[str, Any]:
        error = {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
        return {"error": error}

    def __init__(
        self,
        n_ctx: int = 4096,
        slots: int | None = None,  # None: the default, 4 slots sharing one pool
        *,
        kv_unified: bool | None = None,  # None: unified exactly when `slots` is the default
        n_ctx_train: int = 8192,
        model: str = "SmolLM2-135M-Instruct-Q4_1",
        loading: bool = False,
        meta_n_ctx: bool = True,  # 2026 builds also put the slot's n_ctx in /v1/models meta
        cached_details: bool = True,  # 2026 builds: usage.prompt_tokens_details.cached_tokens
        default_system_prompt: str | None = None,
        overflow_style: OverflowStyle = "http400",
        token_delay: float = 0.0,
        # /props `chat_template_caps`: None gives a tool-calling template's; {} leaves the
        # field out, as older builds do.
        template_caps: dict[str, bool] | None = None,
        # The model's memory can shift (False: sliding-window, hybrid or recurrent, where
        # llama-server ignores n_cache_reuse): tests/helpers/fake_slot_cache.py.
        can_shift: bool = True,
    ) -> None:
        super().__init__(model, token_delay=token_delay)
        self.slot_cache = SlotCache(can_shift=can_shift)
        self.template_caps = (
            {"supports_tools": True, "supports_system_role": True}
            if template_caps is None
            else template_caps
        )
        self.n_ctx = n_ctx
        self.slots = AUTO_SLOTS if slots is None else slots
        self.kv_unified = slots is None if kv_unified is None else kv_unified
        self.pool = KvPool(n_ctx, shared=self.kv_unified and self.slots > 1)
        self.n_ctx_train = n_ctx_train
        self.loading = loading
        self.meta_n_ctx = meta_n_ctx
        self.cached_details = cached_details
        self.default_system_prompt = default_system_prompt
        self.overflow_style = overflow_style
        self.route("GET", "/health", self._health)
        self.route("GET", "/props", self._props)
        self.route("GET", "/slots", self._slots)
        self.route("POST", "/tokenize", self._tokenize)
        self.route("POST", "/apply-template", self._apply_template)
        self.route("POST", "/completion", lambda ex, req: completion(self, ex, req))

    @property
    def per_slot(self) -> int:
        return self.n_ctx if self.kv_unified else self.n_ctx // self.slots

    def knows_model(self, model: Any) -> bool:
        return True  # one server, one model: the name in the request is not checked

    def window_for(self, body: dict[str, Any]) -> int:
        return self.per_slot

    def applied_sampling(self, body: dict[str, Any]) -> dict[str, Any] | str | None:
        return engine_sampling.llama_server(body)

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.default_system_prompt and not any(m.get("role") == "system" for m in messages):
            return [{"role": "system", "content": self.default_system_prompt}, *messages]
        return messages

    def render(self, body: dict[str, Any]) -> str:
        messages = self._messages(body.get("messages") or [])
        if messages and messages[-1].get("role") == "assistant":
            # Like llama-server: a final assistant message is a prefill to continue, rendered
            # without its end of turn and without a generation prompt.
            text = self.vocab.render_chat(messages, body.get("tools"), add_generation_prompt=False)
            return text.removesuffix("<|im_end|>\n")
        return self.vocab.render_chat(messages, body.get("tools"))

    def prompt_tokens(self, body: dict[str, Any]) -> list[int]:
        return self.vocab.tokenize(self.render(body), add_special=True)

    def overflows(self, prompt: int, max_tokens: int | None, window: int) -> bool:
        return prompt >= window

    def cached_tokens(self, tokens: list[int], body: dict[str, Any]) -> int:
        """The slot's cache by the real rule: chunks moved where the model can shift."""
        return self.slot_cache.serve(tokens, body)

    @property
    def rejections(self) -> list[RecordedRequest]:
        """The chat requests it refused as too long."""
        return [r for r in self.chat_requests if r.rejected]

    def usage_details(self, cached: int, prompt: int) -> dict[str, Any] | None:
        return {"cached_tokens": cached} if self.cached_details else None

    def timings(self, prompt: int, cached: int, completion: int) -> dict[str, Any] | None:
        evaluated = prompt - cached
        return {
            "cache_n": cached,
            "prompt_n": evaluated,
            "prompt_ms": evaluated * 2.0,
            "prompt_per_token_ms": 2.0,
            "prompt_per_second": 500.0,
            "predicted_n": completion,
            "predicted_ms": completion * 16.0,
            "predicted_per_token_ms": 16.0,
            "predicted_per_second": 62.5,
        }

    def error_body(self, status: int, message: str, type_: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "type": type_}}

    def overflow_body(self, prompt: int, max_tokens: int | None, window: int) -> dict[str, Any]:
        if self.overflow_style == "http400":
            return {
                "error": {
                    "code": 400,
                    "message": f"request ({prompt} tokens) exceeds the available context size "
                    f"({window} tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt,
                    "n_ctx": window,
                }
            }
        return self.error_body(
            400,
            "the request exceeds the available context size, try increasing the context size "
            "or enable context shift",
            "invalid_request_error",
        )

    def send_overflow(
        self, ex: Exchange, body: dict[str, Any], prompt: int, max_tokens: int | None, window: int
    ) -> None:
        if self.overflow_style in ("http400", "legacy400") or not body.get("stream"):
            ex.send_json(400, self.overflow_body(prompt, max_tokens, window))
            return
        error = self.overflow_body(prompt, max_tokens, window)["error"]
        ex.start_stream("text/event-stream")
        if self.overflow_style == "sse_error_field":
            ex.write(b"error: " + json.dumps(error).encode() + b"\n\n")
        else:
            ex.write(b"data: " + json.dumps({"error": error}).encode() + b"\n\n")
        ex.end_stream()

    def midstream_error(self, reply: Reply) -> bytes:
        error = {"code": 500, "message": reply.error_message, "type": "server_error"}
        if self.overflow_style == "sse_error_field":
            return b"error: " + json.dumps(error).encode() + b"\n\n"
        return b"data: " + json.dumps({"error": error}).encode() + b"\n\n"

    def _unavailable(self, ex: Exchange) -> None:
        ex.send_json(503, self.error_body(503, "Loading model", "unavailable_error"))

    def before_chat(self, ex: Exchange) -> bool:
        if self.loading:
            self._unavailable(ex)
            return False
        return True

    def _health(self, ex: Exchange, req: RecordedRequest) -> None:
        if self.loading:
            self._unavailable(ex)
        else:
            ex.send_json(200, {"status": "ok"})

    def _props(self, ex: Exchange, req: RecordedRequest) -> None:
        if self.loading:
            self._unavailable(ex)
            return
        ex.send_json(
            200,
            {
                "default_generation_settings": {
                    "params": {"temperature": 0.8, "top_k": 40, "n_predict": -1},
                    "n_ctx": self.per_slot,
                },
                "total_slots": self.slots,
                "model_alias": self.model,
                "model_path": f"/models/{self.model}.gguf",
                "chat_template": "{{- bos_token }}...",
                **({"chat_template_caps": self.template_caps} if self.template_caps else {}),
                "bos_token": "<s>",
                "eos_token": "</s>",
                "build_info": "b7123-fake",
                "is_sleeping": False,
            },
        )

    def _slots(self, ex: Exchange, req: RecordedRequest) -> None:
        """One entry per slot with the n_ctx it holds (tools/server: `/slots`, on unless
        --no-slots), as `n_slots = …, n_ctx_slot = …` in the real server's log."""
        if self.loading:
            self._unavailable(ex)
            return
        held = [
            {"id": i, "n_ctx": self.per_slot, "is_processing": False} for i in range(self.slots)
        ]
        ex.send_json(200, held)

    def _models(self, ex: Exchange, req: RecordedRequest) -> None:
        meta: dict[str, Any] | None = None
        if not self.loading:
            meta = {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": self.n_ctx_train}
            if self.meta_n_ctx:  # the slot's, as /props (seen on the real server, -np 2)
                meta["n_ctx"] = self.per_slot
        ex.send_json(
            200,
            {
                "models": [{"name": self.model, "model": self.model, "type": "model"}],
                "object": "list",
                "data": [
                    {
                        "id": self.model,
                        "object": "model",
                        "created": 1755800000,
                        "owned_by": self.owned_by,
                        "meta": meta,
                    }
                ],
            },
        )

    def _tokenize(self, ex: Exchange, req: RecordedRequest) -> None:
        body = req.body if isinstance(req.body, dict) else {}
        content = body.get("content")
        if not isinstance(content, str):
            ex.send_json(
                400, self.error_body(400, '"content" must be provided', "invalid_request_error")
            )
            return
        tokens = self.vocab.tokenize(content, add_special=bool(body.get("add_special")))
        ex.send_json(200, {"tokens": tokens})

    def _apply_template(self, ex: Exchange, req: RecordedRequest) -> None:
        body = req.body if isinstance(req.body, dict) else {}
        ex.send_json(200, {"prompt": self.render(body)})
