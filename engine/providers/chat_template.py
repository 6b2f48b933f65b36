"""A GGUF's own chat template, rendered exactly as llama-cpp-python renders it.

The embedded child (which builds the prompt it evaluates) and the parent's exact tokenizer
(which counts it) both go through this one module, so the count Brim shows and the prompt
the engine evaluates cannot drift apart. The rendering mirrors llama-cpp-python's
`Jinja2ChatFormatter` plus `chat_formatter_to_chat_completion_handler`: the template gets
`bos_token`/`eos_token` as text, and the rendered prompt is tokenized with special tokens
parsed and no extra BOS (the template adds what it wants).

llama_cpp is imported lazily: importing Brim must not load the native library.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.messages import Message
from engine.providers.think_split import opens_thinking
from engine.resources import resource_text

if TYPE_CHECKING:
    from llama_cpp import Llama


def template_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Brim messages in the shape chat templates expect (the Hugging Face convention:
    tool-call arguments as a mapping, not JSON text). Notice rows never reach the model."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.is_notice:
            continue
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.parsed_arguments()},
                }
                for c in m.tool_calls
            ]
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id
            if m.name:
                item["name"] = m.name
        out.append(item)
    return out


def template_tools(tools: Iterable[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Tools in the wrapped OpenAI form templates iterate over; bare function schemas are
    wrapped. None when there are none, so templates that test `tools` see nothing."""
    wrapped = [t if "function" in t else {"type": "function", "function": t} for t in tools or ()]
    return wrapped or None


def stand_in_template(metadata: dict[str, str]) -> tuple[str, str]:
    """The format (its name and template) for a GGUF without a chat template, by its
    architecture: Gemma's turns for a Gemma (resources/chat_templates/gemma.jinja), else
    ChatML."""
    if metadata.get("general.architecture", "").startswith("gemma"):
        return "Gemma", resource_text("chat_templates", "gemma.jinja")
    from llama_cpp import llama_chat_format

    return "ChatML", llama_chat_format.CHATML_CHAT_TEMPLATE


@dataclass(frozen=True)
class ChatTemplate:
    """One model's chat template and the special-token texts it is rendered with."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    from_model: bool = True  # False: the GGUF had none and `stand_in` is used instead
    stand_in: str = ""  # the name of the format standing in: "ChatML", "Gemma"
    _formatters: dict[bool, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_llama(cls, llm: Llama) -> ChatTemplate:
        """The template llama-cpp-python itself would pick for this model: the GGUF's
        `tokenizer.chat_template`. A GGUF without one would fall back to the llama-2 format
        there, which is wrong for nearly every modern model: a Gemma gets Gemma's turns
        (its vocabulary has no ChatML tokens), any other ChatML, the better guess."""

        def text_of(token_id: int) -> str:
            return llm._model.token_get_text(token_id) if token_id != -1 else ""

        source = llm.metadata.get("tokenizer.chat_template")
        name, stand_in = ("", "") if source else stand_in_template(llm.metadata)
        return cls(
            source=source or stand_in,
            bos_token=text_of(llm.token_bos()),
            eos_token=text_of(llm.token_eos()),
            from_model=bool(source),
            stand_in=name,
        )

    @property
    def supports_tools(self) -> bool:
        """Whether the template renders tool schemas at all; others get tools=None."""
        return "tools" in self.source

    def _formatter(self, add_generation_prompt: bool) -> Any:
        formatter = self._formatters.get(add_generation_prompt)
        if formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            formatter = Jinja2ChatFormatter(
                template=self.source,
                eos_token=self.eos_token,
                bos_token=self.bos_token,
                add_generation_prompt=add_generation_prompt,
            )
            self._formatters[add_generation_prompt] = formatter
        return formatter

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> tuple[str, bool]:
        """The prompt text and whether a BOS must be prepended when tokenizing it."""
        result = self._formatter(add_generation_prompt)(
            messages=messages, tools=template_tools(tools) if self.supports_tools else None
        )
        return result.prompt, not result.added_special

    def opens_thinking(self) -> bool:
        """Whether the generation prompt ends inside a `<think>` block the template opened
        itself (the model's answer then starts with its reasoning, and only `</think>`
        comes): a one-message conversation, rendered. A template that cannot render it
        says no."""
        if "<think>" not in self.source:
            return False
        try:
            prompt, _ = self.render([{"role": "user", "content": "Hi"}])
        except Exception:
            return False
        return opens_thinking(prompt)


def prompt_tokens(llm: Llama, prompt: str, add_bos: bool) -> list[int]:
    """Tokenize a rendered prompt the way llama-cpp-python's chat handler does."""
    return llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
