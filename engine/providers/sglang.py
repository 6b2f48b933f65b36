"""SGLang: like vLLM on the wire; `owned_by: "sglang"` is what tells them apart.

Its `/get_server_info` also carries `context_length`, but null unless set on the command line,
and the same answer can hold API keys: Brim never asks for it, so it can never log it.

Its `/v1/tokenize` tokenizes text (`prompt`: one text or a list, one count each) with the
model's own tokenizer, no chat template: Brim counts each message's text exactly through it
and learns the template's framing from the prompt tokens each answer reports.
"""

from __future__ import annotations

from typing import Any

from engine.providers.classify import MAX_TOKEN_COUNT, as_int
from engine.providers.errors import EngineUnreachable, ProviderError
from engine.providers.openai_compat import OpenAICompatProvider


class SglangProvider(OpenAICompatProvider):
    kind = "sglang"
    engine_name = "SGLang"
    owned_by = "sglang"

    def counting_note(self, model: str) -> str:
        return "SGLang's /v1/tokenize did not answer (an older build, or the endpoint is off)"

    def counts_texts(self, model: str) -> str:
        return "SGLang's /v1/tokenize of each message's text"

    async def count_texts(self, model: str, texts: list[str]) -> list[int] | None:
        """Each text's tokens, in one request; None when this server cannot say (no
        /v1/tokenize, or an answer that is not one count per text)."""
        body: dict[str, Any] = {
            "model": self.served_names.id_for(model),
            "prompt": texts,
            "add_special_tokens": False,
        }
        try:
            answer = await self._post_json("/v1/tokenize", body, model=model)
        except EngineUnreachable:
            raise
        except ProviderError:
            return None
        counts = answer.get("count") if isinstance(answer, dict) else None
        if not isinstance(counts, list) or len(counts) != len(texts):
            return None
        checked = [as_int(c) for c in counts]
        if any(c is None or not 0 <= c <= MAX_TOKEN_COUNT for c in checked):
            return None  # a count no text can have is no count
        return [c for c in checked if c is not None]
