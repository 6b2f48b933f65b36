"""vLLM: one server-wide window (`max_model_len`, fixed at start) and an exact `/tokenize`."""

from __future__ import annotations

from typing import Any

from engine.messages import Message, model_messages, to_openai
from engine.providers.engine_segments import EngineSegments
from engine.providers.errors import EngineUnreachable, ProviderError
from engine.providers.http_base import as_window
from engine.providers.openai_compat import OpenAICompatProvider


class VllmProvider(OpenAICompatProvider):
    kind = "vllm"
    engine_name = "vLLM"
    owned_by = "vllm"

    def engine_segments(self, model: str) -> EngineSegments:
        async def count(messages: list[Message], tools: list[dict[str, Any]]) -> int | None:
            return await self.count_prompt(model, messages, tools)

        return EngineSegments(count, "vLLM's /tokenize of each message through its chat template")

    def counting_note(self, model: str) -> str:
        return "vLLM's /tokenize did not answer (an older build, or the endpoint is off)"

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        """Exact: vLLM applies the model's chat template and tokenizer to the messages. None
        when this server cannot (an older build, or a tokenizer endpoint switched off)."""
        body: dict[str, Any] = {
            "model": self.served_names.id_for(model),
            "messages": [to_openai(m) for m in model_messages(messages)],
            "add_generation_prompt": True,
        }
        if tools:
            body["tools"] = tools
        try:
            answer = await self._post_json("/tokenize", body, model=model)
        except EngineUnreachable:
            raise
        except ProviderError:
            return None
        if not isinstance(answer, dict):
            return None
        count = as_window(answer.get("count"))  # a count no prompt can have is no count
        if count is None and isinstance(answer.get("tokens"), list):
            count = len(answer["tokens"])
        return count
