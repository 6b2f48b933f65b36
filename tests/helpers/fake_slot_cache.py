"""The fake llama-server's prompt cache, by the real server's rule (tests/helpers/chunk_reuse.py),
and its `/completion` endpoint, which Brim's cache-reuse probe uses.

A slot holds the last prompt it evaluated. A new prompt is served from it: the common prefix,
then, with the request's `n_cache_reuse` N > 0, the chunks of at least N tokens it moves to new
positions, but only where the model's memory can shift (`can_shift`). llama-server turns chunk
reuse off for sliding-window, hybrid and recurrent models (Gemma 3 among them) and logs
"cache reuse is not supported - ignoring n_cache_reuse"; such a fake serves the prefix only.
At least one token is always evaluated, as on the real server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.helpers.chunk_reuse import reused_tokens

if TYPE_CHECKING:
    from tests.helpers.fake_http import Exchange, RecordedRequest
    from tests.helpers.fake_openai import FakeLlamaServer


class SlotCache:
    def __init__(self, *, can_shift: bool = True) -> None:
        self.can_shift = can_shift
        self.held: list[int] = []

    def serve(self, tokens: list[int], body: dict[str, Any]) -> int:
        """How many of `tokens` the slot takes from its cache; it then holds `tokens`."""
        chunk = body.get("n_cache_reuse")
        chunk = chunk if isinstance(chunk, int) and self.can_shift else 0
        reused = reused_tokens(self.held, tokens, chunk) if body.get("cache_prompt", True) else 0
        self.held = list(tokens)
        return min(reused, max(len(tokens) - 1, 0))


def completion(server: FakeLlamaServer, ex: Exchange, req: RecordedRequest) -> None:
    """`POST /completion` with a raw prompt, answered in one JSON object: one token of text,
    the slot that served it, and the timings (`cache_n` what the cache served)."""
    if not server.before_chat(ex):
        return
    body = req.body if isinstance(req.body, dict) else {}
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        ex.send_json(400, server.error_body(400, '"prompt" must be a string', "invalid_request"))
        return
    tokens = server.vocab.tokenize(prompt, add_special=True)  # the served vocabulary
    cached = server.slot_cache.serve(tokens, body)
    req.prompt_tokens, req.evaluated_tokens = len(tokens), len(tokens) - cached
    predicted = 0 if body.get("n_predict") == 0 else 1
    ex.send_json(
        200,
        {
            "content": " x" if predicted else "",
            "id_slot": 0,
            "stop": True,
            "tokens_evaluated": len(tokens),
            "timings": server.timings(len(tokens), cached, predicted),
        },
    )
