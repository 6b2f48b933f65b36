"""Following a server that was restarted under another served name.

vLLM and SGLang serve a model under the name given at launch (`--served-model-name`); restart
the same server with another name and every request naming the old one gets 404 ("The model
`smol` does not exist. Valid aliases: smol-v2."). When the server serves exactly one base
model (LoRA adapters, which carry a `parent`, do not count), that model is the one the agent
meant: Brim sends its id instead, and says so once, naming both. With several base models it
cannot know which, and the agent's name stays refused with the list of what is served. Nor is
a name followed to a model this server was already asked for by its own name (a summarizer
model that is not served is another model, not a rename: it falls back as it always did).
"""

from __future__ import annotations

from typing import Any

from engine.providers.base import NOTICE_MODEL_RENAMED, EngineNotice


class ServedNames:
    """The agent's model name to the id the server serves it under now (by default, itself)."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._named: set[str] = set()  # ids asked for by their own name

    def named(self, served: str) -> None:
        self._named.add(served)

    def id_for(self, model: str) -> str:
        return self._ids.get(model, model)

    def follow(self, model: str, cards: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The card to use for `model`, which no card is named: the server's one base model,
        remembered for every later request. None when there is not exactly one."""
        bases = [card for card in cards if not card.get("parent")]
        if not model or len(bases) != 1 or bases[0]["id"] in self._named:
            return None
        card = bases[0]
        self._ids[model] = str(card["id"])
        return card


def renamed_notice(where: str, model: str, served: str) -> EngineNotice:
    return EngineNotice(
        NOTICE_MODEL_RENAMED,
        f"{where} does not serve {model!r} (the agent's model) but serves one model, "
        f"{served!r}: Brim uses {served!r}. Set model = {served!r} in the agent to keep it.",
        {"model": model, "served": served},
    )
