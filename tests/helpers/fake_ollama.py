"""A fake Ollama: `/api/version`, `/api/tags`, `/api/ps`, `/api/show`, `/api/chat` (NDJSON).

Faithful where Brim depends on it (engines.md, and Ollama's source at the tags named): the
window is the request's `options.num_ctx`, else the Modelfile's, else the server default,
each capped at the training length; a different `num_ctx` than the loaded one reloads the model
(`reloads` counts it), and so, from 0.30.0, does a different `shift` (a launch setting of the
model's llama-server there); `/api/ps` lists only loaded models, with `context_length`
(unless `ps_context_length=False`, as before v0.10); unknown models are 404; a mid-stream
failure is a final `{"error": ...}` line with status 200.

A prompt longer than the window, by version (`version`, as /api/version says it):
- before 0.12.6 `truncate` and `shift` are unknown fields, ignored (Gin's JSON binding);
- by default it is cut silently (whole messages from the front, system messages and the
  last message kept, then a cut to the window) and answered 200 with a `prompt_eval_count`
  below what was sent;
- with `truncate: false`: 400 "the input length exceeds the context length" before 0.30.0;
  from 0.30.0 the 400 carries llama-server's own error body as its text
  (OVERFLOW_BODY_TEMPLATE, with the sizes);
- from 0.30.0 with `shift: false` a prompt still too long after dropping messages is a 400
  "the prompt is longer than the context length currently available to the model; ...".
With `shift: false` an answer stops at the window (`done_reason: "length"`).

`prompt_eval_count` is the whole prompt (after a cut) on every version but 0.30.0 (and its
release candidates), where it leaves out what the prompt cache served (the prefix shared with
the model's previous prompt, forgotten at every load), so follow-ups report a fraction.
From 0.33.3 the last line also carries `prompt_eval_cached_count`, that served part
(engines.md; the stored source snapshot, v0.33.0-rc2, predates it).

A model with the `thinking` capability reasons (`Reply.reasoning`, streamed in
`message.thinking`) as tests/helpers/fake_reasoning.py describes.

Loads, as server/routes.go and server/sched.go decide them:
- `/api/chat` with no messages loads the model with the request's options and answers one
  JSON object with `done_reason: "load"` (with `keep_alive: 0`, unloads it: "unload");
  `load_requests` lists those, `chat_requests` the rest;
- `load_duration` is the time from the request's arrival to a runner ready, never 0: a few
  milliseconds when the model was loaded already (WARM_LOAD_NS), a load's time when this
  request loaded it (LOAD_NS);
- from 0.30.0 a request without `num_ctx` (and no Modelfile `num_ctx`) on a model loaded the
  same way keeps the window it has (needsReload: `runner.numCtxAuto && req.numCtxAuto`);
  before, it asks for the server default like any other value;
- a model unused for `keep_alive_s` is unloaded (its `expires_at` in /api/ps passes);
- `another_client(model, num_ctx)` is another program's request: it loads by the same rules,
  so it reloads the model where its options differ from the loaded ones.

    with FakeOllama([OllamaModel("llama3.1:8b", context_length=131072)]) as srv:
        srv.script_reply("Hi.")
        ...
        assert {r.body["options"]["num_ctx"] for r in srv.chat_requests} == {8192}
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tests.helpers import engine_sampling, fake_reasoning, smollm2_vocab
from tests.helpers.fake_http import Exchange, FakeServer, RecordedRequest, play, within_tokens
from tests.helpers.fake_tokenizer import common_prefix
from tests.helpers.smollm2_vocab import (
    count_chat,
    count_text,
    head_tokens,
    render_chat,
    tokenize,
)

OVERFLOW_MESSAGE = "the input length exceeds the context length"  # the runners, < 0.30.0
SHIFT_OFF_MESSAGE = (  # 0.30.0+, shift off, the prompt too long even after dropping messages
    "the prompt is longer than the context length currently available to the model; shorten "
    "the prompt, adjust the context length in settings, or use a model with a longer context "
    "length"
)
STRICT_SINCE = (0, 12, 6)
LLAMA_SERVER_RUNNER_SINCE = (0, 30, 0)
CACHE_EXCLUDED_COUNT = (0, 30, 0)
CACHED_COUNT_SINCE = (0, 33, 3)  # prompt_eval_cached_count in every answer
AUTO_NUM_CTX_KEPT_SINCE = (0, 30, 0)
WARM_LOAD_NS = 1_334_875  # load_duration of a request whose model was loaded already
LOAD_NS = 1_250_000_000  # load_duration of a request that loaded the model
DEFAULT_KEEP_ALIVE_S = 300.0  # OLLAMA_KEEP_ALIVE's default, 5m
OUT_OF_MEMORY = "model requires more system memory (5.5 GiB) than is available (3.1 GiB)"


def overflow_body(sent: int, window: int) -> str:
    """llama-server's 400 body, as Ollama 0.30+ passes it on as the text of its error."""
    return json.dumps(
        {
            "error": {
                "code": 400,
                "message": f"request ({sent} tokens) exceeds the available context size "
                f"({window} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": sent,
                "n_ctx": window,
            }
        }
    )


@dataclass
class OllamaModel:
    name: str = "llama3.1:8b"
    arch: str = "llama"
    context_length: int = 131072  # training length: model_info["<arch>.context_length"]
    modelfile_num_ctx: int | None = None  # PARAMETER num_ctx in its Modelfile
    blob: str | None = None  # the GGUF its modelfile's FROM names (default: a made-up blob)
    capabilities: tuple[str, ...] = ("completion", "tools")
    family: str = "llama"
    parameter_size: str = "8.0B"
    size: int = 6591830464  # /api/ps `size`: bytes the loaded model takes
    size_vram: int | None = None  # /api/ps `size_vram`: of those, on the GPU (None: all)
    # Loaded with at most this num_ctx, all of it is on the GPU (None: `size_vram` at any):
    # a smaller window's KV cache leaves room for the layers that spilled.
    on_gpu_up_to: int | None = None
    # Sampler settings its Modelfile names (PARAMETER temperature 0.6, ...): shown in
    # /api/show `parameters` and applied under a request's `options`, as Ollama does
    # (server/routes.go: the model's Options over DefaultOptions, the request's over both).
    parameters: dict[str, float | int] = field(default_factory=dict)


def _version_tuple(text: str) -> tuple[int, ...]:
    """A release candidate ("0.30.0-rc5") behaves as the release it leads to."""
    return tuple(int(part) for part in text.split("-")[0].split(".") if part.isdigit())


def _is_load(body: Any) -> bool:
    return isinstance(body, dict) and not body.get("messages")


def _rfc3339(epoch: float) -> str:
    """A time as Ollama writes it: local offset, nanoseconds."""
    when = datetime.fromtimestamp(epoch).astimezone()
    return (
        when.strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{when.microsecond:06d}000"
        + when.strftime("%z")[:3]
        + ":"
        + when.strftime("%z")[3:]
    )


def _vram(model: OllamaModel, num_ctx: int) -> int:
    if model.size_vram is None or (
        model.on_gpu_up_to is not None and num_ctx <= model.on_gpu_up_to
    ):
        return model.size
    return model.size_vram


def _full_name(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class FakeOllama(FakeServer):
    name = "fake-ollama"
    vocab: Any = smollm2_vocab  # the served model's tokens: what its counts and caps count

    def __init__(
        self,
        models: list[OllamaModel] | None = None,
        *,
        default_num_ctx: int = 4096,
        version: str = "0.33.0",
        ps_context_length: bool = True,
        token_delay: float = 0.0,
        keep_alive_s: float = DEFAULT_KEEP_ALIVE_S,
        refuse_loads: str | None = None,
    ) -> None:
        """`refuse_loads`: the 500 error a load without messages gets (the model did not fit
        the memory free at that moment); requests with messages load as usual."""
        super().__init__(token_delay=token_delay)
        self.keep_alive_s = keep_alive_s
        self.refuse_loads = refuse_loads
        self.models = {_full_name(m.name): m for m in (models or [OllamaModel()])}
        self.default_num_ctx = default_num_ctx
        self.version = version
        self.ps_context_length = ps_context_length
        self.loaded: dict[str, int] = {}  # model -> the num_ctx it is loaded with
        self.loaded_shift: dict[str, bool] = {}  # model -> its llama-server's context shift
        self.loaded_auto: dict[str, bool] = {}  # model -> loaded with Ollama's own num_ctx
        self.expires: dict[str, float] = {}  # model -> when it is unloaded if unused (epoch s)
        self.loads: list[tuple[str, int]] = []  # every load, reloads included
        self.reloads = 0  # loads that replaced the same model at another num_ctx
        self._cache: dict[str, list[int]] = {}  # model -> the tokens of its last prompt
        self.route("GET", "/api/version", self._version_route)
        self.route("GET", "/api/tags", self._tags)
        self.route("GET", "/api/ps", self._ps)
        self.route("POST", "/api/show", self._show)
        self.route("POST", "/api/chat", self._chat)
        self.route("GET", "/v1/models", self._openai_models)  # its OpenAI-compatible listing

    # -- test-facing helpers --------------------------------------------------------------

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests that asked for an answer (a load has no messages)."""
        return [r for r in self.requests_to("/api/chat") if not _is_load(r.body)]

    @property
    def load_requests(self) -> list[RecordedRequest]:
        """`/api/chat` requests with no messages: loads (or unloads) without an answer."""
        return [r for r in self.requests_to("/api/chat") if _is_load(r.body)]

    def load(self, model: str, num_ctx: int, *, shift: bool = True, auto: bool = False) -> None:
        """Load a model as another client would have (it then shows in /api/ps); `auto`: with
        the window Ollama chose itself (the request named no num_ctx)."""
        name = _full_name(model)
        if name in self.loaded and (self.loaded[name], self.loaded_shift[name]) != (num_ctx, shift):
            self.reloads += 1
        self.loaded[name] = num_ctx
        self.loaded_shift[name] = shift
        self.loaded_auto[name] = auto
        self.loads.append((name, num_ctx))
        self._cache.pop(name, None)  # a load starts with an empty KV cache
        self._touch(name)

    def another_client(self, model: str, num_ctx: int | None = None, *, shift: bool = True) -> bool:
        """Another program's chat request for `model` (`num_ctx` None: it names none), loading
        it by the rules Brim's requests meet; True when that reloaded it."""
        self._expire_idle()
        name = _full_name(model)
        options = {} if num_ctx is None else {"num_ctx": num_ctx}
        before = len(self.loads)
        self._schedule(name, self.models[name], options, shift)
        return len(self.loads) > before

    def unload(self, model: str) -> None:
        """The model leaves memory (its keep-alive ran out, or `ollama stop`)."""
        name = _full_name(model)
        for table in (self.loaded, self.loaded_shift, self.loaded_auto, self.expires):
            table.pop(name, None)
        self._cache.pop(name, None)

    def _touch(self, name: str) -> None:
        self.expires[name] = time.time() + self.keep_alive_s

    def _expire_idle(self) -> None:
        now = time.time()
        for name in [n for n, at in self.expires.items() if at <= now]:
            self.unload(name)

    def _auto(self, model: OllamaModel, options: dict[str, Any]) -> bool:
        """Whether the window is Ollama's own choice (usesAutomaticNumCtx)."""
        return not isinstance(options.get("num_ctx"), int) and not model.modelfile_num_ctx

    def _schedule(self, name: str, model: OllamaModel, options: dict[str, Any], shift: bool) -> int:
        """Load `name` for a request unless it is loaded the way it asks (needsReload);
        returns the window it then runs with."""
        window = self.window_for(model, options)
        auto = self._auto(model, options)
        if (
            auto
            and self.loaded_auto.get(name)
            and name in self.loaded
            and self._version >= AUTO_NUM_CTX_KEPT_SINCE
        ):
            window = self.loaded[name]  # both Ollama's own choice: the loaded one stands
        loaded_shift = self.loaded_shift.get(name, True) if self.runs_llama_server else shift
        if self.loaded.get(name) != window or loaded_shift != shift:
            self.load(name, window, shift=shift, auto=auto)
        else:
            self._touch(name)
        return window

    @property
    def _version(self) -> tuple[int, ...]:
        return _version_tuple(self.version)

    @property
    def counts_cached_tokens(self) -> bool:
        """prompt_eval_count includes the tokens the prompt cache served, on every version
        but 0.30.0 (Ollama commit 35fa277 restored it in 0.30.1)."""
        return self._version[:3] != CACHE_EXCLUDED_COUNT

    @property
    def takes_strict_fields(self) -> bool:
        """`truncate` and `shift` are fields of /api/chat from 0.12.6."""
        return self._version >= STRICT_SINCE

    @property
    def runs_llama_server(self) -> bool:
        """From 0.30.0 every GGML model runs on llama-server, shift being a launch setting."""
        return self._version >= LLAMA_SERVER_RUNNER_SINCE

    def _reused(self, name: str, tokens: list[int]) -> int:
        """The prefix of this prompt already in the model's KV cache (at least one token is
        always evaluated, as llama.cpp does)."""
        cached = min(common_prefix(tokens, self._cache.get(name, [])), max(len(tokens) - 1, 0))
        self._cache[name] = tokens
        return cached

    def window_for(self, model: OllamaModel, options: dict[str, Any]) -> int:
        requested = options.get("num_ctx")
        if isinstance(requested, int) and requested > 0:
            # No more than the training length (server/sched.go effectiveContext, and
            # llm/llama_server.go: "requested context size too large for model").
            return min(requested, model.context_length)
        if model.modelfile_num_ctx:
            return model.modelfile_num_ctx
        return min(self.default_num_ctx, model.context_length)

    # -- routes ---------------------------------------------------------------------------

    def _version_route(self, ex: Exchange, req: RecordedRequest) -> None:
        ex.send_json(200, {"version": self.version})

    def _details(self, m: OllamaModel) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": m.family,
            "families": [m.family],
            "parameter_size": m.parameter_size,
            "quantization_level": "Q4_K_M",
        }

    def _tags(self, ex: Exchange, req: RecordedRequest) -> None:
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": "2026-08-01T10:00:00.123456789Z",
                "size": 4920753328,
                "digest": "a" * 64,
                "details": self._details(m),
            }
            for name, m in self.models.items()
        ]
        ex.send_json(200, {"models": models})

    def _openai_models(self, ex: Exchange, req: RecordedRequest) -> None:
        """`/v1/models` as Ollama answers it: no window, `owned_by` the name's namespace."""
        data = [
            {"id": name, "object": "model", "created": 1754000000, "owned_by": "library"}
            for name in self.models
        ]
        ex.send_json(200, {"object": "list", "data": data})

    def _ps(self, ex: Exchange, req: RecordedRequest) -> None:
        self._expire_idle()
        running = []
        for name, num_ctx in self.loaded.items():
            entry: dict[str, Any] = {
                "name": name,
                "model": name,
                "size": self.models[name].size,
                "digest": "c" * 64,
                "details": self._details(self.models[name]),
                "expires_at": _rfc3339(self.expires.get(name, time.time())),
                "size_vram": _vram(self.models[name], num_ctx),
            }
            if self.ps_context_length:
                entry["context_length"] = num_ctx
            running.append(entry)
        ex.send_json(200, {"models": running})

    def _lookup(self, ex: Exchange, body: Any) -> OllamaModel | None:
        name = body.get("model") if isinstance(body, dict) else None
        model = self.models.get(_full_name(name)) if isinstance(name, str) and name else None
        if model is None:
            ex.send_json(404, {"error": f"model '{name}' not found"})
        return model

    def _show(self, ex: Exchange, req: RecordedRequest) -> None:
        m = self._lookup(ex, req.body)
        if m is None:
            return
        parameters = 'stop                           "<|eot_id|>"'
        blob = m.blob or f"/root/.ollama/models/blobs/sha256-{'b' * 64}"
        modelfile = f'# Modelfile generated by "ollama show"\n# FROM {m.name}\n\nFROM {blob}\n'
        if m.modelfile_num_ctx:
            parameters = f"num_ctx                        {m.modelfile_num_ctx}\n" + parameters
            modelfile += f"PARAMETER num_ctx {m.modelfile_num_ctx}\n"
        for key, value in m.parameters.items():  # Go's "%-30s %#v": 0.6, 20
            shown = format(value, "g") if isinstance(value, float) else str(value)
            parameters += f"\n{key:<30} {shown}"
            modelfile += f"PARAMETER {key} {shown}\n"
        ex.send_json(
            200,
            {
                "license": "...",
                "modelfile": modelfile,
                "parameters": parameters,
                "template": "{{ if .System }}...",
                "details": self._details(m),
                "model_info": {
                    "general.architecture": m.arch,
                    "general.parameter_count": 8030261248,
                    f"{m.arch}.context_length": m.context_length,
                    f"{m.arch}.embedding_length": 4096,
                },
                "capabilities": list(m.capabilities),
                "modified_at": "2026-08-01T10:00:00.123456789Z",
            },
        )

    @staticmethod
    def _bare_answer(model: str, reason: str) -> dict[str, Any]:
        """ChatHandler's answer to a request with no messages."""
        return {
            "model": model,
            "created_at": _rfc3339(time.time()),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
        }

    @staticmethod
    def _truncate(
        messages: list[dict[str, Any]], tools: Any, window: int
    ) -> tuple[list[dict[str, Any]], int]:
        """Ollama's cut: drop whole messages from the front, keeping system messages and the
        last one; if that is still too long, cut the prompt itself to the window."""
        kept = list(messages)
        index = 0
        while count_chat(kept, tools) > window and index < len(kept) - 1:
            if kept[index].get("role") == "system":
                index += 1
                continue
            del kept[index]
        return kept, min(count_chat(kept, tools), window)

    def _chat(self, ex: Exchange, req: RecordedRequest) -> None:
        m = self._lookup(ex, req.body)
        if m is None:
            return
        body = req.body
        name = _full_name(body["model"])
        refused = fake_reasoning.ollama_refusal(body["model"], m.capabilities, body.get("think"))
        if refused is not None:  # before the load, as ChatHandler checks it first
            ex.send_json(400, {"error": refused})
            return
        if body.get("tools") and "tools" not in m.capabilities:  # Ollama's answer, before a load
            ex.send_json(
                400, {"error": f"registry.ollama.ai/library/{name} does not support tools"}
            )
            return
        options = body.get("options") or {}
        strict = self.takes_strict_fields
        truncate = body.get("truncate") is not False or not strict
        shift = body.get("shift") is not False or not strict
        self._expire_idle()
        messages = body.get("messages") or []
        if not messages and body.get("keep_alive") == 0:
            self.unload(name)
            ex.send_json(200, self._bare_answer(body["model"], "unload"))
            return
        if not messages and self.refuse_loads:
            ex.send_json(500, {"error": self.refuse_loads})
            return
        loads = len(self.loads)
        window = self._schedule(name, m, options, shift)
        load_ns = LOAD_NS if len(self.loads) > loads else WARM_LOAD_NS
        req.window = window
        if not messages:  # a load without an answer: one JSON object, streamed or not
            ex.send_json(200, self._bare_answer(body["model"], "load"))
            return
        given = options if isinstance(options, dict) else {}
        req.sampling = engine_sampling.ollama({**m.parameters, **given})
        tools = body.get("tools") or None
        sent = count_chat(messages, tools)
        evaluated = sent
        refusal: tuple[int, Any] | None = None
        if sent > window and not truncate:
            if self.runs_llama_server:
                refusal = (400, overflow_body(sent, window))
            else:
                refusal = (400, OVERFLOW_MESSAGE)
        elif sent > window:
            kept, evaluated = self._truncate(messages, tools, window)
            if self.runs_llama_server and not shift and count_chat(kept, tools) > window:
                refusal, evaluated = (400, SHIFT_OFF_MESSAGE), sent
        req.prompt_tokens, req.evaluated_tokens, req.window = sent, evaluated, window
        req.truncated = evaluated < sent
        reported = evaluated
        cached_count: int | None = None
        if not self.counts_cached_tokens and evaluated == sent:
            reported = evaluated - self._reused(name, tokenize(render_chat(messages, tools)))
        elif self._version >= CACHED_COUNT_SINCE and refusal is None:
            kept_messages = (
                messages if evaluated == sent else self._truncate(messages, tools, window)[0]
            )
            reused = self._reused(name, tokenize(render_chat(kept_messages, tools)))
            cached_count = min(reused, max(evaluated - 1, 0))
        reply = self.next_reply(req)
        req.reply = reply
        if reply.fail == "http500":
            ex.send_json(500, {"error": reply.error_message})
            return
        if refusal is not None:
            req.truncated = False
            ex.send_json(refusal[0], {"error": refusal[1]})
            return
        if reply.fail == "overflow":
            ex.send_json(400, {"error": OVERFLOW_MESSAGE})
            return

        thinks = fake_reasoning.ollama_thinks(m.capabilities, body.get("think"))
        thought, pieces = fake_reasoning.pieces(reply, thinks=thinks)
        limit = options.get("num_predict")
        done_reason = reply.finish_reason or "stop"
        if isinstance(limit, int) and limit >= 0:
            thought, pieces, cut = fake_reasoning.capped(
                thought, pieces, limit, count_text, head_tokens
            )
            if cut:
                done_reason = "length"
        room = max(0, window - evaluated)
        kept = pieces if shift else within_tokens(pieces, room, count_text, head_tokens)
        if len(kept) < len(pieces):  # no context shift: the answer ends at the window
            pieces, done_reason = kept, "length"
        calls = [
            {
                "id": call.id or f"call_{i}",
                "function": {"index": i, "name": call.name, "arguments": call.arguments},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
        eval_count = (
            count_text("".join(thought))
            + count_text("".join(pieces))
            + sum(count_text(c.name + " " + json.dumps(c.arguments)) for c in reply.tool_calls)
        )
        final = {
            "model": body["model"],
            "created_at": "2026-08-21T19:22:45.4Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": done_reason,
            "total_duration": 4883583458,
            "load_duration": load_ns,
            "prompt_eval_count": reported,
            "prompt_eval_duration": reported * 1_000_000,
            "eval_count": eval_count,
            "eval_duration": eval_count * 10_000_000,
        }
        if cached_count is not None:
            final["prompt_eval_cached_count"] = cached_count
        if body.get("stream", True) is False:
            final["message"] = {"role": "assistant", "content": "".join(pieces)}
            if thought:
                final["message"]["thinking"] = "".join(thought)
            if calls:
                final["message"]["tool_calls"] = calls
            ex.send_json(200, final)
            return

        def line(obj: dict[str, Any]) -> bytes:
            return json.dumps(obj).encode() + b"\n"

        def piece(text: str) -> bytes:
            return line(
                {
                    "model": body["model"],
                    "created_at": "2026-08-21T19:22:44.1Z",
                    "message": {"role": "assistant", "content": text},
                    "done": False,
                }
            )

        ex.start_stream("application/x-ndjson")
        for text in thought:
            thinking = {"role": "assistant", "content": "", "thinking": text}
            line_obj = {"model": body["model"], "created_at": "2026-08-21T19:22:43.9Z"}
            if not ex.write(line({**line_obj, "message": thinking, "done": False})):
                return
        if not play(
            self,
            ex,
            reply,
            pieces,
            piece=piece,
            error_event=lambda: line({"error": reply.error_message}),
            malformed=b'{"model": "broken\n',
        ):
            return
        if calls:
            ex.write(
                line(
                    {
                        "model": body["model"],
                        "created_at": "2026-08-21T19:22:45.0Z",
                        "message": {"role": "assistant", "content": "", "tool_calls": calls},
                        "done": False,
                    }
                )
            )
        ex.write(line(final))
        ex.end_stream()
