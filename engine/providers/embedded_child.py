"""The embedded engine's child process: llama-cpp-python behind a pipe.

llama.cpp can crash natively (a segfault inside `llama_decode` on some CPUs); in a child
that costs the parent one error message instead of the whole app. The child drives
`Llama.generate` itself rather than `create_chat_completion`, so it knows exactly which
tokens it evaluated: the prompt count it reports is the prompt it ran, the completion count
is the tokens it sampled, and the cached count is the prefix the KV cache really reused.

A reader thread drains the pipe the whole time, so a cancel lands while the main thread is
busy generating: it is checked between tokens and, through llama.cpp's abort callback,
inside a long prompt evaluation too.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypedDict

from engine.providers.chat_template import ChatTemplate, prompt_tokens
from engine.providers.embedded_load_log import (
    captured_load_log,
    gpu_offload_supported,
    placement,
)
from engine.providers.embedded_penalty import generate as penalised_generate
from engine.providers.embedded_protocol import (
    LOAD_ID,
    ChildConfig,
    overflow_message,
    read_message,
    write_message,
)
from engine.providers.sampling import BRIM_DEFAULTS
from engine.providers.tool_call_text import ToolCallText

Send = Callable[[dict[str, Any]], None]


class SamplerArgs(TypedDict):
    """The sampler settings `Llama.generate` takes by keyword."""

    temp: float
    top_k: int
    top_p: float
    min_p: float
    repeat_penalty: float


def sampler_args(request: dict[str, Any]) -> tuple[SamplerArgs, int | None]:
    """`Llama.generate`'s keywords and the seed for one chat request (its `sampling`, a
    `Sampling` as a dict; Brim's defaults for what it leaves out)."""
    given = request.get("sampling") or {}
    default = BRIM_DEFAULTS

    def pick(name: str) -> Any:
        value = given.get(name)
        return getattr(default, name) if value is None else value

    args: SamplerArgs = {
        "temp": float(pick("temperature")),
        "top_k": int(pick("top_k")),
        "top_p": float(pick("top_p")),
        "min_p": float(pick("min_p")),
        "repeat_penalty": float(pick("repeat_penalty")),
    }
    seed = given.get("seed")
    return args, int(seed) if seed is not None else None


EVERYTHING = "*"  # in the cancelled set: the child is stopping, end whatever runs


class StopText:
    """Ends generation at the first stop string, holding back just enough streamed text
    that a stop string split across tokens is never shown."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.pending = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """The text safe to show now, and whether a stop string was reached."""
        if not self.stops:
            return text, False
        self.pending += text
        hits = [i for i in (self.pending.find(s) for s in self.stops) if i >= 0]
        if hits:
            out, self.pending = self.pending[: min(hits)], ""
            return out, True
        cut = len(self.pending) - self.hold
        if cut <= 0:
            return "", False
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return out, False

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return out


@contextlib.contextmanager
def model_params_override(
    extra_bufts: bool, progress: Callable[[float], None] | None
) -> Iterator[None]:
    """Make `Llama(...)` load with the given `use_extra_bufts` and a progress callback.

    The high-level constructor exposes neither field of `llama_model_params`, but builds
    them from `llama_model_default_params()`; wrapping that one function for the duration
    of one constructor call is the narrowest way in. Only ever done in the child.
    """
    import llama_cpp.llama_cpp as native

    original = native.llama_model_default_params
    callback = None
    if progress is not None:
        callback = native.llama_progress_callback(
            lambda fraction, _data: progress(fraction) or True
        )

    def patched() -> Any:
        params = original()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = extra_bufts
        if callback is not None:
            params.progress_callback = callback
        return params

    native.llama_model_default_params = patched
    try:
        yield
    finally:
        native.llama_model_default_params = original


class Engine:
    """One loaded model and the state of its single slot."""

    def __init__(self, config: ChildConfig, send: Send, cancelled: set[str]) -> None:
        import llama_cpp.llama_cpp as native
        from llama_cpp import Llama

        self._native = native
        last = [-1.0]

        def progress(fraction: float) -> None:
            if fraction >= 1.0 or fraction - last[0] >= 0.05:
                last[0] = fraction
                send({"type": "progress", "id": LOAD_ID, "fraction": float(fraction)})

        offload = gpu_offload_supported()
        gpu_layers = config.gpu_layers if config.gpu_layers is not None else (-1 if offload else 0)
        kv_type = getattr(native, f"GGML_TYPE_{config.kv_cache_type.upper()}")
        with model_params_override(config.extra_bufts, progress), captured_load_log() as log:
            self.llm = Llama(
                model_path=config.model_path,
                n_ctx=config.n_ctx,
                n_threads=config.n_threads,
                n_threads_batch=config.n_threads,
                n_gpu_layers=gpu_layers,
                # llama-cpp-python takes flash attention as on or off; llama.cpp's own
                # "auto" is on wherever the backend has the kernels, so auto is on here
                flash_attn=config.flash_attn != "off",
                type_k=kv_type,
                type_v=kv_type,
                verbose=False,
            )
        self.offload = {
            **placement(log.text()).to_json(),
            "gpu_offload_supported": offload,
            "gpu_layers": gpu_layers,
            "flash_attn": config.flash_attn,
            "kv_cache_type": config.kv_cache_type,
        }
        self.template = ChatTemplate.from_llama(self.llm)
        self.vocab = native.llama_model_get_vocab(self.llm.model)
        arch = self.llm.metadata.get("general.architecture", "")
        raw_max = self.llm.metadata.get(f"{arch}.context_length")
        self.model_max = int(raw_max) if raw_max and raw_max.isdigit() else None
        # What the abort callback consults: the id of the request being served, and the
        # ids the parent asked to cancel (filled by the reader thread). The callback object
        # is kept on self because llama.cpp holds only a raw pointer to it.
        self.current: str | None = None
        self.cancelled = cancelled
        self._abort = native.ggml_abort_callback(lambda _data: self._should_abort())
        self._no_abort = native.ggml_abort_callback()

    def _watch_for_cancel(self, on: bool) -> None:
        """llama.cpp consults the abort callback hundreds of times per decode; it is only
        worth that during prompt evaluation, the one long stretch with no token between."""
        callback = self._abort if on else self._no_abort
        self._native.llama_set_abort_callback(self.llm.ctx, callback, None)

    def _should_abort(self) -> bool:
        return self.current is not None and self._is_cancelled(self.current)

    def _is_cancelled(self, request_id: str) -> bool:
        return request_id in self.cancelled or EVERYTHING in self.cancelled

    def loaded_message(self) -> dict[str, Any]:
        return {
            "type": "loaded",
            "id": LOAD_ID,
            "n_ctx": self.llm.n_ctx(),
            "model_max": self.model_max,
            "has_template": self.template.from_model,
            "template_stand_in": self.template.stand_in,
            "supports_tools": self.template.supports_tools,
            "offload": self.offload,
        }

    def reusable_prefix(self, tokens: list[int]) -> int:
        """How many prompt tokens `Llama.generate` will take from the KV cache (its rule:
        the common prefix with what was evaluated, minus one token it replays to refresh the
        logits when the whole prompt matched, unless those logits are still live)."""
        evaluated = self.llm.input_ids[: self.llm.n_tokens]
        common = 0
        for a, b in zip(evaluated, tokens, strict=False):
            if a != b:
                break
            common += 1
        if common and common == len(tokens):
            live = self.llm.n_tokens == common and not getattr(self.llm, "_requires_eval", True)
            return common if live else common - 1
        return common

    def tokenize(self, request: dict[str, Any], send: Send) -> None:
        tokens = self.llm.tokenize(
            request["text"].encode("utf-8"), add_bos=False, special=bool(request.get("special"))
        )
        send({"type": "tokens", "id": request["id"], "tokens": list(tokens)})

    def chat(self, request: dict[str, Any], send: Send) -> None:
        rid = request["id"]
        tools = request.get("tools") if self.template.supports_tools else None
        prompt, add_bos = self.template.render(request["messages"], tools)
        tokens = prompt_tokens(self.llm, prompt, add_bos)
        window = self.llm.n_ctx()
        if len(tokens) >= window:
            send(
                {
                    "type": "error",
                    "id": rid,
                    "kind": "context_overflow",
                    "message": overflow_message(len(tokens), window),
                    "prompt_tokens": len(tokens),
                    "window": window,
                }
            )
            return
        cached = self.reusable_prefix(tokens)
        budget = window - len(tokens)
        max_tokens = request.get("max_tokens")
        max_tokens = budget if not max_tokens or max_tokens <= 0 else min(max_tokens, budget)
        sampler, seed = sampler_args(request)

        calls = ToolCallText() if tools else None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        completion = 0
        finish = "length"
        started = time.perf_counter()
        first: float | None = None

        def emit(text: str) -> None:
            if calls is not None:
                text = calls.feed(text)
            if text:
                send({"type": "delta", "id": rid, "text": text})

        stops = StopText(request.get("stop") or [])

        self.current = rid
        self.cancelled.intersection_update({rid, EVERYTHING})
        self._watch_for_cancel(True)
        # Seeded per answer: unset, llama.cpp's "default seed" draws a fresh one; set, the
        # same prompt gets the same answer.
        self.llm.set_seed(seed if seed is not None else self._native.LLAMA_DEFAULT_SEED)
        generator = penalised_generate(self.llm, tokens, **sampler)
        try:
            for token in generator:
                if first is None:
                    first = time.perf_counter()
                    self._watch_for_cancel(False)
                if self._is_cancelled(rid):
                    finish = "cancelled"
                    break
                if self._native.llama_vocab_is_eog(self.vocab, token):
                    finish = "stop"
                    break
                completion += 1
                text, stopped = stops.feed(decoder.decode(self.llm.detokenize([token])))
                emit(text)
                if stopped:
                    finish = "stop"
                    break
                if completion >= max_tokens:
                    break
        except RuntimeError:
            # An aborted llama_decode (the parent cancelled during prompt evaluation) ends
            # here; anything else is a real failure.
            if not self._is_cancelled(rid):
                raise
            finish = "cancelled"
        finally:
            generator.close()
            self._watch_for_cancel(False)
            self.current = None
        ended = time.perf_counter()
        if finish != "stop":
            tail, _ = stops.feed(decoder.decode(b"", final=True))
            emit(tail + stops.flush())
        tool_calls: list[tuple[str, str]] = []
        if calls is not None:
            rest = calls.finish()
            if rest:
                send({"type": "delta", "id": rid, "text": rest})
            tool_calls = calls.calls
            if tool_calls and finish == "stop":
                finish = "tool_calls"
        send(
            {
                "type": "done",
                "id": rid,
                "finish_reason": finish,
                "tool_calls": tool_calls,
                "usage": {
                    "prompt_tokens": len(tokens),
                    "completion_tokens": completion,
                    "cached_tokens": cached,
                    "prompt_eval_s": (first or ended) - started,
                    "eval_s": ended - (first or ended),
                },
            }
        )


def _read_pipe(
    stream: IO[bytes], inbox: queue.Queue[dict[str, Any] | None], cancelled: set[str]
) -> None:
    """Drain the pipe: cancels take effect at once, everything else waits its turn. A stop,
    or the parent going away, also ends the answer in progress."""
    try:
        while True:
            message = read_message(stream)
            if message.get("op") == "cancel":
                cancelled.add(message["id"])
                continue
            if message.get("op") == "stop":
                cancelled.add(EVERYTHING)
            inbox.put(message)
    except (EOFError, OSError):
        pass
    cancelled.add(EVERYTHING)
    inbox.put(None)


def _load(config: ChildConfig, send: Send, cancelled: set[str]) -> Engine | None:
    if not Path(config.model_path).is_file():
        send(
            {
                "type": "error",
                "id": LOAD_ID,
                "kind": "model_not_found",
                "message": f"no model file at {config.model_path}",
            }
        )
        return None
    try:
        engine = Engine(config, send, cancelled)
    except (ValueError, RuntimeError) as exc:
        send(
            {
                "type": "error",
                "id": LOAD_ID,
                "kind": "model_not_found",
                "message": f"llama.cpp could not load {config.model_path} as a GGUF model: {exc}",
            }
        )
        return None
    send(engine.loaded_message())
    return engine


def serve(incoming: IO[bytes], outgoing: IO[bytes]) -> None:
    """Load and serve until told to stop or until the parent goes away."""
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    cancelled: set[str] = set()

    def send(message: dict[str, Any]) -> None:
        write_message(outgoing, message)

    reader = threading.Thread(
        target=_read_pipe, args=(incoming, inbox, cancelled), name="brim-child-pipe", daemon=True
    )
    reader.start()
    engine: Engine | None = None
    try:
        while (message := inbox.get()) is not None:
            op = message.get("op")
            if op == "stop":
                break
            try:
                if op == "load":
                    engine = _load(message["config"], send, cancelled)
                    if engine is None:
                        break
                elif engine is None:
                    send(_error(message, "server_error", "the embedded model is not loaded"))
                elif op == "chat":
                    engine.chat(message, send)
                elif op == "tokenize":
                    engine.tokenize(message, send)
                else:
                    send(_error(message, "protocol_error", f"unknown operation {op!r}"))
            except (BrokenPipeError, EOFError):
                break
            except Exception as exc:
                detail = "".join(traceback.format_exception_only(exc)).strip()
                send(_error(message, "server_error", f"the embedded engine failed: {detail}"))
    except OSError:
        pass


def main() -> None:
    """Entry point: the protocol on stdin and a private copy of stdout; fd 1 itself goes to
    stderr so that whatever llama.cpp prints cannot land inside a frame.

    It leaves with os._exit: the reader thread may sit in a blocking read of stdin, and a
    normal interpreter shutdown would wait on that read's lock."""
    outgoing = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        serve(sys.stdin.buffer, outgoing)
    finally:
        with contextlib.suppress(OSError):
            outgoing.flush()
        sys.stderr.flush()
        os._exit(0)


def _error(request: dict[str, Any], kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "id": request.get("id"), "kind": kind, "message": message}


if __name__ == "__main__":
    main()
