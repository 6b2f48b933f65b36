"""llama.cpp's `llama-server`: the window is per slot, and it can count exactly.

`/props` says what one slot holds (`default_generation_settings.n_ctx`) and how many slots
there are; `/v1/models` says what the model was trained for (`meta.n_ctx_train`). Nothing
says whether the slots share one unified KV pool (then a slot's window is a ceiling, not a
guarantee); the automatic four-slot setting does, so that one is warned about.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from engine.messages import Message
from engine.providers.base import (
    ChatOptions,
    EngineNotice,
    EngineReport,
    ModelInfo,
    PromptText,
    StreamItem,
    Usage,
)
from engine.providers.bundled_models import named
from engine.providers.cache_reuse import CacheReuse
from engine.providers.engine_segments import EngineSegments
from engine.providers.errors import EngineUnreachable, ProviderError, ServerError
from engine.providers.http_base import as_int, as_window
from engine.providers.llamacpp_reuse_probe import probe_llama_server
from engine.providers.model_sampling import read_gguf, server_params, template_thinks
from engine.providers.ollama_answers import runs_here
from engine.providers.openai_compat import (
    OpenAICompatProvider,
    cached_from_usage,
    reasoning_from_usage,
)
from engine.providers.sampling import Sampling
from engine.providers.sampling_source import ModelSampling, SamplingPlan, plan
from engine.providers.server_gate import ServerGate
from engine.window.pin_check import (
    PIN_NOT_HONOURED,
    llamacpp_refusal,
    refusal_details,
    refusal_text,
)


def _ms_to_s(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value) / 1000.0
    return None


AUTO_PARALLEL_SLOTS = 4

# The smallest run of tokens llama-server moves to a new place in its KV cache rather than
# evaluating again (`n_cache_reuse`, per request: tools/server's task params default it to the
# server's `--cache-reuse`, which is off). Its loop matches the new prompt, from the first
# difference on, against chunks of what the slot holds, so it reuses what stays after a part
# is taken out (a trim drops the oldest messages: the rest is shifted, not recomputed); new
# text before a kept part (a checkpoint ahead of the kept tail) ends the matching there. A
# server whose cache cannot shift (sliding-window models) ignores it and says so in its log.
CACHE_REUSE_CHUNK = 256


class LlamaCppProvider(OpenAICompatProvider):
    kind = "llamacpp"
    engine_name = "llama-server"
    owned_by = "llamacpp"
    sampling_dialect = "llamacpp"  # repeat_penalty, top_k 0 for none (tools/server)
    renders_prompts = True  # POST /apply-template
    effort_in_kwargs = True  # its template reads `reasoning_effort` (reasoning_wire.py)

    def __init__(self, base_url: str | None = None, **kw: Any) -> None:
        super().__init__(base_url, **kw)
        # Brim's own chat requests to this server never overlap (engine/providers/server_gate.py)
        # while its slots may share one KV pool: until /props says how many slots it runs,
        # and from then on when they are the automatic, unified four, or only one. Slots of
        # their own (an explicit --parallel N, N > 1) serve two conversations at once.
        self.gate = ServerGate(self.base_url)
        self.serialised = True
        self._bundled = False  # from /props `model_path`, at report()
        self._served: ModelSampling | None = None  # the one model it serves, at report()
        # /props `chat_template_caps.supports_preserve_reasoning`, read at report(): the
        # template renders an assistant message's `reasoning_content` sent back.
        self.preserves_reasoning: bool | None = None

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncGenerator[StreamItem, None]:
        gate = self.gate.held() if self.serialised else contextlib.nullcontext()
        async with gate:
            async for item in super().stream_chat(model, messages, options):
                yield item

    def request_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        body = super().request_body(model, messages, options)
        body["n_cache_reuse"] = CACHE_REUSE_CHUNK
        return body

    def reasoning_key(self) -> str | None:
        """`reasoning_content`, where /props said the template renders it (and only for the
        tool-calling turn still running: reasoning_wire.py)."""
        return "reasoning_content" if self.preserves_reasoning else None

    async def probe_cache_reuse(self, model: str) -> CacheReuse:
        """Two short completions in one slot, read by their `timings.cache_n`
        (engine/providers/llamacpp_reuse_probe.py); never beside another of Brim's requests
        to this server (they would evict each other's prompt)."""
        async with self.gate.held():
            return await probe_llama_server(lambda path, body: self._post_json(path, body))

    async def ready(self) -> bool:
        """True once `/health` answers 200 (it answers 503 while the model loads). A build
        without /health is taken as ready: /props then says what it serves."""
        try:
            await self._get_json("/health")
        except EngineUnreachable:
            raise
        except ProviderError as exc:
            if exc.status == 503:
                return False
            if exc.status != 404:
                return True  # /props will say what is wrong, in its own words
            try:  # a build without /health: /props answers 503 while loading instead
                await self._get_json("/props")
            except EngineUnreachable:
                raise
            except ProviderError as props_exc:
                return props_exc.status != 503
        return True

    async def _props(self) -> dict[str, Any]:
        try:
            props = await self._get_json("/props")
        except ServerError as exc:
            if exc.status == 503:
                raise ServerError(
                    f"{self.where} is still loading its model (HTTP 503); "
                    "try again when it is ready",
                    status=503,
                ) from exc
            raise
        if not isinstance(props, dict):
            raise self._protocol_error("a /props answer that is not a JSON object")
        return props

    async def _cards_or_empty(self) -> list[dict[str, Any]]:
        """`/v1/models`, or nothing on builds that lack it: it only adds facts here."""
        try:
            return await self._model_cards()
        except EngineUnreachable:
            raise
        except ProviderError:
            return []

    async def _slot_windows(self) -> list[int]:
        """`/slots`: the n_ctx each slot holds (nothing where the server runs --no-slots)."""
        try:
            listed = await self._get_json("/slots")
        except EngineUnreachable:
            raise
        except ProviderError:
            return []
        if not isinstance(listed, list):
            return []
        found = (as_window(s.get("n_ctx")) for s in listed if isinstance(s, dict))
        return [n for n in found if n is not None]

    @staticmethod
    def _pick_card(cards: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
        # One server serves one model; match by name where it can, else take what it has.
        for card in cards:
            if card.get("id") == model:
                return card
        return cards[0] if cards else None

    async def list_models(self) -> list[ModelInfo]:
        cards = await self._model_cards()
        out = []
        for card in cards:
            meta = found if isinstance(found := card.get("meta"), dict) else {}
            out.append(
                ModelInfo(
                    id=str(card["id"]),
                    served_window=as_window(meta.get("n_ctx")),
                    model_max=as_window(meta.get("n_ctx_train")),
                    owned_by=card.get("owned_by"),
                )
            )
        return out

    async def report(self, model: str) -> EngineReport:
        try:
            props = await self._props()
        except ProviderError as exc:
            # No /props: not llama-server. Ollama's /v1 is worth naming; anything else fails.
            behind = await self.ollama_behind() if exc.status == 404 else None
            if behind is None:
                raise
            return EngineReport(
                provider=self.kind, model=model, window_rule="slot", notices=[behind]
            )
        settings = props.get("default_generation_settings")
        settings = settings if isinstance(settings, dict) else {}
        per_slot = as_window(settings.get("n_ctx"))
        if per_slot is None:
            per_slot = as_window(props.get("n_ctx"))  # some older builds put it at the top level
        held = await self._slot_windows() if props.get("endpoint_slots") is not False else []
        if held:  # each slot's own n_ctx: the smallest is what a request can count on
            per_slot = min([*held, *([per_slot] if per_slot is not None else [])])
        slots = as_window(props.get("total_slots"))
        card = self._pick_card(await self._cards_or_empty(), model)
        meta = found if card and isinstance(found := card.get("meta"), dict) else {}
        model_max = as_window(meta.get("n_ctx_train"))
        warnings: list[str] = []
        # No field says whether the slots share one KV pool: a real server reports the same
        # per-slot n_ctx in /props and in meta either way (checked on b-2026 builds). Four
        # slots is what llama-server picks by itself when started without --parallel, and
        # that automatic setting unifies the pool; an explicit --parallel N does not.
        unified = bool(slots == AUTO_PARALLEL_SLOTS and per_slot)
        if unified:
            warnings.append(
                f"llama-server runs {slots} slots, its automatic setting when started without "
                f"--parallel, in which the slots share one KV pool (--kv-unified): a request "
                f"may use up to {per_slot} tokens, but concurrent requests draw on the same "
                "pool and can starve this one (every request in flight then fails with "
                '"Context size has been exceeded."). Brim sends its own requests one at a '
                "time and retries when another client fills the pool. Start it with an "
                "explicit --parallel N for a guaranteed per-slot window."
            )
        # One slot queues a second request inside the server ("no slot available, defer
        # task"), where its timeout runs and it evicts the first one's prompt: one at a time.
        self.serialised = slots is None or slots < 2 or unified
        self.model_sampling[model] = self._served = self._learn_sampling(props, settings)
        caps = found if isinstance(found := props.get("chat_template_caps"), dict) else {}
        tools = caps.get("supports_tools")
        preserves = caps.get("supports_preserve_reasoning")
        self.preserves_reasoning = preserves if isinstance(preserves, bool) else None
        # No cap says "this model thinks" on the builds seen (common/jinja/caps.h); a build
        # that says `supports_thinking` is believed, and a template that renders earlier
        # reasoning is a thinking model's.
        thinks = caps.get("supports_thinking")
        if not isinstance(thinks, bool):
            thinks = True if preserves is True else None
        served_model = model or str(card.get("id") or "") if card else model
        return EngineReport(
            provider=self.kind,
            model=served_model,
            window_rule="slot",
            served=per_slot,
            model_max=model_max,
            slots=slots,
            unified_pool=unified,
            # What the model's chat template can render (newer builds); absent: not known.
            tool_calls=tools if isinstance(tools, bool) else None,
            thinks=thinks,
            preserves_reasoning=self.preserves_reasoning,
            warnings=warnings,
            notices=self._pin_notices(served_model, per_slot, slots, unified, model_max),
        )

    def _learn_sampling(self, props: dict[str, Any], settings: dict[str, Any]) -> ModelSampling:
        """What the served GGUF names (its own header, where the file is on this machine),
        and what the server samples an omitted setting with (`/props`)."""
        path = props.get("model_path")
        self._bundled = isinstance(path, str) and named(Path(path).name) is not None
        here = isinstance(path, str) and bool(path) and runs_here(self.base_url)
        read = read_gguf(str(path)) if here else None
        return ModelSampling(
            named=read[0] if read is not None else {},
            engine=server_params(settings.get("params")),
            thinks=template_thinks(props.get("chat_template")),
        )

    def serves_bundled(self, model: str) -> bool:
        """The server's `model_path` is a bundled model's file (SmolLM2's, by its name)."""
        return self._bundled

    def sampling_plan(self, model: str, sampling: Sampling) -> SamplingPlan:
        """One server serves one model, whatever name a request gives it."""
        learned = self.model_sampling.get(model) or self._served
        return plan(sampling, learned, self.kind, bundled=self._bundled)

    def _pin_notices(
        self,
        model: str,
        per_slot: int | None,
        slots: int | None,
        unified: bool,
        model_max: int | None,
    ) -> list[EngineNotice]:
        """The slots hold less than the pin this provider was built with: said once, with
        its cause (engine/window/pin_check.py); the requests then count on the slot."""
        if self.num_ctx is None:
            return []
        refused = llamacpp_refusal(
            self.num_ctx,
            per_slot,
            slots=slots if slots and slots > 0 else None,
            unified=unified,
            model_max=model_max,
        )
        if refused is None:
            return []
        text = refusal_text(refused, engine=self.kind, model=model)
        details = refusal_details(refused, engine=self.kind, model=model)
        return [EngineNotice(PIN_NOT_HONOURED, text, details)]

    def usage_from(self, usage: dict[str, Any] | None, timings: dict[str, Any] | None) -> Usage:
        usage = usage if isinstance(usage, dict) else {}
        timings = timings if isinstance(timings, dict) else {}
        prompt = as_int(usage.get("prompt_tokens"))
        completion = as_int(usage.get("completion_tokens"))
        cached = cached_from_usage(usage)
        prompt_n, cache_n = as_int(timings.get("prompt_n")), as_int(timings.get("cache_n"))
        if cached is None:
            cached = cache_n
        if prompt is None and prompt_n is not None:
            prompt = prompt_n + (cache_n or 0)
        if completion is None:
            completion = as_int(timings.get("predicted_n"))
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            reasoning_tokens=reasoning_from_usage(usage),
            prompt_eval_s=_ms_to_s(timings.get("prompt_ms")),
            eval_s=_ms_to_s(timings.get("predicted_ms")),
        )

    def engine_segments(self, model: str) -> EngineSegments:
        async def count(messages: list[Message], tools: list[dict[str, Any]]) -> int | None:
            return await self.count_prompt(model, messages, tools)

        return EngineSegments(
            count, "llama-server's /tokenize of each message as its /apply-template frames it"
        )

    def counting_note(self, model: str) -> str:
        return "llama-server's /apply-template or /tokenize did not answer"

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        """Exact: the server renders its own chat template, then tokenizes the result the way
        a chat request is tokenized. None when this server cannot (e.g. tools without --jinja)."""
        try:
            prompt = await self._applied_template(messages, tools)
            if prompt is None:
                return None
            tokens = await self._post_json(
                "/tokenize", {"content": prompt, "add_special": True, "parse_special": True}
            )
        except EngineUnreachable:
            raise
        except ProviderError:
            return None
        listed = tokens.get("tokens") if isinstance(tokens, dict) else None
        return len(listed) if isinstance(listed, list) else None

    async def render_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> PromptText | None:
        try:
            prompt = await self._applied_template(messages, tools)
        except ProviderError:
            return None
        return PromptText(prompt, "llama-server's /apply-template") if prompt is not None else None

    async def _applied_template(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> str | None:
        """The server's own chat template applied to the request (its prompt text)."""
        body: dict[str, Any] = {"messages": self.wire_messages(messages)}
        if tools:
            body["tools"] = tools
        rendered = await self._post_json("/apply-template", body)
        prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
        return prompt if isinstance(prompt, str) else None
