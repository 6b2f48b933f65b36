"""SGLang: like vLLM on the wire; `owned_by: "sglang"` is what tells them apart.

Its `/get_server_info` also carries `context_length`, but null unless set on the command line,
and the same answer can hold API keys: Brim never asks for it, so it can never log it.
"""

from __future__ import annotations

from engine.providers.openai_compat import OpenAICompatProvider


class SglangProvider(OpenAICompatProvider):
    kind = "sglang"
    engine_name = "SGLang"
    owned_by = "sglang"

    def counting_note(self, model: str) -> str:
        # Its /tokenize takes a text prompt, not chat messages: no chat template applied.
        return "SGLang's /tokenize takes text, not chat messages, so it cannot frame a chat"
