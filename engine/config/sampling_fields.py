"""The agent's sampler settings, as schema entries (engine/config/schema.py lists them).

Every one may be left unset, and none is set by default: an unset setting is not sent, so the
model's own (its maker's: a GGUF's `general.sampling.*`, a Modelfile's PARAMETER lines, a
generation_config.json) applies, or the engine's default where the model names none. Brim's
measured defaults fill in for the bundled model, and for a model that names nothing on an
engine whose own fallback is bad (vLLM's temperature 1.0): engine/providers/sampling_source.py
says exactly when. The ranges are the ones every engine accepts (SGLang is the strictest:
top_p above 0, repetition_penalty at most 2).

Agent files written before this wrote Brim's five defaults out; engine/config/agent_files.py
reads that untouched block as unset (docs/agents.md says so).

Kept apart from the schema's list, which takes them in whole.
"""

from __future__ import annotations

from typing import Any

from engine.config.field_spec import FieldSpec
from engine.providers.sampling import SEED_MAX

SAMPLING_FIELD_NAMES = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed")
# What an unset one means (the editor's placeholder where it knows no more, a new file's
# comment): the model's value, else the engine's default, else Brim's (the rule above).
LEFT_TO_THE_MODEL = "the model's own, else the engine's or Brim's default"


def sampling_fields() -> tuple[FieldSpec, ...]:
    """The schema entries of the sampler settings, in the editor's order."""
    return (
        FieldSpec(
            "temperature",
            "float",
            default=None,
            nullable=True,
            unset=LEFT_TO_THE_MODEL,
            minimum=0.0,
            maximum=5.0,
            group="sampling",
            label="Temperature",
            description=(
                "How freely the model picks among likely next tokens: 0 always takes the "
                "likeliest, higher is more varied. Summaries and memory keep their own."
            ),
        ),
        FieldSpec(
            "top_p",
            "float",
            default=None,
            nullable=True,
            unset=LEFT_TO_THE_MODEL,
            minimum=0.01,
            maximum=1.0,
            group="sampling",
            label="Top-p",
            description=(
                "Pick only among the likeliest tokens that together make up this share of "
                "the probability (1: no cut)."
            ),
        ),
        FieldSpec(
            "top_k",
            "int",
            default=None,
            nullable=True,
            unset=LEFT_TO_THE_MODEL,
            minimum=0,
            maximum=100_000,
            group="sampling",
            label="Top-k",
            description="Pick only among this many likeliest tokens (0: no cut).",
        ),
        FieldSpec(
            "min_p",
            "float",
            default=None,
            nullable=True,
            unset=LEFT_TO_THE_MODEL,
            minimum=0.0,
            maximum=1.0,
            group="sampling",
            label="Min-p",
            description=(
                "Drop tokens less likely than this share of the likeliest one's probability "
                "(0: no cut)."
            ),
        ),
        FieldSpec(
            "repeat_penalty",
            "float",
            default=None,
            nullable=True,
            unset=LEFT_TO_THE_MODEL,
            minimum=0.1,
            maximum=2.0,
            group="sampling",
            label="Repeat penalty",
            description=(
                "Makes tokens already used less likely (1: no penalty). llama.cpp and Ollama "
                "look back 64 tokens; vLLM and SGLang (as repetition_penalty) the whole prompt."
            ),
        ),
        FieldSpec(
            "seed",
            "int",
            default=None,
            nullable=True,
            unset="a new seed for every answer",
            minimum=0,
            maximum=SEED_MAX,
            group="sampling",
            label="Seed",
            example=42,
            description=(
                "Fixes the sampler's random draws, so the same request gets the same answer "
                "(SGLang only with --enable-deterministic-inference)."
            ),
        ),
    )


# What every new agent file said before the settings could be left to the model: Brim's five
# defaults, written out (engine/providers/sampling.py at the time).
OLD_WRITTEN_OUT = {
    "temperature": 0.0,
    "top_p": 0.9,
    "top_k": 40,
    "min_p": 0.05,
    "repeat_penalty": 1.05,
}


def drop_old_written_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """An agent file's values without the sampling block Brim itself wrote into every new
    file before: all five present with exactly those values is Brim's writing, not the
    user's choice, and is read as unset (left to the model). A block with any one value
    changed was edited, and all five are kept as the agent's own."""
    if all(name in values and values[name] == v for name, v in OLD_WRITTEN_OUT.items()):
        return {k: v for k, v in values.items() if k not in OLD_WRITTEN_OUT}
    return values
