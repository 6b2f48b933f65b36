"""The agent's sampler settings, as schema entries (engine/config/schema.py lists them).

Every one has a value: the defaults are Brim's, measured on the bundled model
(engine/providers/sampling.py), and every request carries them, so an engine's own default
(vLLM's temperature 1.0 when the model folder names none) never applies. Only the seed may be
left unset: then each answer gets a fresh one. The ranges are the ones every engine accepts
(SGLang is the strictest: top_p above 0, repetition_penalty at most 2).

Kept apart from the schema's list, which takes them in whole.
"""

from __future__ import annotations

from engine.config.field_spec import FieldSpec
from engine.providers.sampling import SEED_MAX, Sampling

SAMPLING_FIELD_NAMES = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed")
# Written out in every new agent file (the default agent's included), so the file shows the
# settings its model is sampled with; the seed, unset, stays a commented example.
WRITTEN_OUT = SAMPLING_FIELD_NAMES[:-1]
_DEFAULT = Sampling()


def sampling_fields() -> tuple[FieldSpec, ...]:
    """The schema entries of the sampler settings, in the editor's order."""
    return (
        FieldSpec(
            "temperature",
            "float",
            default=_DEFAULT.temperature,
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
            default=_DEFAULT.top_p,
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
            default=_DEFAULT.top_k,
            minimum=0,
            maximum=100_000,
            group="sampling",
            label="Top-k",
            description="Pick only among this many likeliest tokens (0: no cut).",
        ),
        FieldSpec(
            "min_p",
            "float",
            default=_DEFAULT.min_p,
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
            default=_DEFAULT.repeat_penalty,
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
