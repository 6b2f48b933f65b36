"""The window Brim accounts against, and where that number came from.

Accounting against a window larger than the one the engine really serves is the worst failure
Brim can have: the engine drops the middle of the conversation (Ollama, silently) long before
Brim thinks it is full. So the rules below trust, in order: what the engine serves now, what the
user pinned, the model's training length, and only then the model catalog (a name match
against hosted listings, which disagree with each other) and the 128K placeholder. The
function is pure so every rule can be checked from a table, without an engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from engine.providers.base import EngineNotice, EngineReport
from engine.providers.errors import ProviderError

WindowSource = Literal[
    "pinned", "server", "model-max", "catalog", "fallback", "ceiling", "assumed", "observed"
]
# "assumed": nothing says yet (an unpinned Ollama model that is not loaded), so Brim accounts
# against the engine's usual default until the first answer tells. "observed": learned from
# what the engine did (a rejection below what it reports, a silent cut), not from what it said.

# The placeholder for a model nobody reports a window for. It caps nothing: a pin above it is
# honoured, because the user pinned it and configured the server to serve it.
FALLBACK_WINDOW = 131072

# What Ollama loads an unpinned model with on most machines (below 24 GiB of VRAM, and on
# every version up to 0.15.4; findings.md). Until /api/ps tells, accounting against it costs
# an early compaction at worst; accounting against 128K lets Ollama cut prompts unseen.
OLLAMA_ASSUMED_WINDOW = 4096

# A window no real engine serves: a report outside these bounds is a broken build or a bad
# field, and accounting against it would either compact every turn or never.
MIN_SANE_WINDOW = 257
MAX_SANE_WINDOW = 100_000_000


class AbsurdWindow(ProviderError):
    """The engine reported a window no model has (<= 256 or above 100M tokens)."""

    kind = "absurd_window"
    retryable = False


def check_reported(value: int | None, *, what: str, engine: str, model: str) -> int | None:
    """A window as the engine reported it, refused when it is absurd: Brim would rather say
    so than account against 0, 128 or 10^12 tokens."""
    if value is None or value <= 0:
        return None
    if not MIN_SANE_WINDOW <= value <= MAX_SANE_WINDOW:
        raise AbsurdWindow(
            f"{engine} reports {what} of {value:,} tokens for {model or 'its model'}, which no "
            f"model has (Brim accepts {MIN_SANE_WINDOW:,} to {MAX_SANE_WINDOW:,}); check the "
            "server's context settings (-c, num_ctx, --max-model-len), or pin num_ctx in the "
            "agent."
        )
    return int(value)


@dataclass
class WindowResolution:
    provider: str
    model: str
    window: int
    source: WindowSource
    served: int | None
    model_max: int | None
    pinned: int | None
    ceiling: int | None
    slots: int | None
    warnings: list[str] = field(default_factory=list)
    shared_pool: bool = (
        False  # llama-server's slots draw on one KV pool (engine/agent/shared_pool.py)
    )
    tool_calls: bool | None = None  # from the engine's report; None: not known
    # Whether the model can reason (the report's `thinks`, read by name); None: not known.
    thinks: bool | None = None
    notices: list[EngineNotice] = field(default_factory=list)  # the report's, with data

    def to_probe_json(self) -> dict[str, Any]:
        """Exactly the fields of the `brim probe --json` contract (a notice's text is one
        of its warnings there)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "window": self.window,
            "source": self.source,
            "served": self.served,
            "model_max": self.model_max,
            "pinned": self.pinned,
            "ceiling": self.ceiling,
            "slots": self.slots,
            "shared_pool": self.shared_pool,
            "warnings": [*self.warnings, *(n.text for n in self.notices)],
        }


def resolve_window(
    report: EngineReport,
    *,
    pinned: int | None,
    ceiling: int | None,
    catalog_max: int | None,
) -> WindowResolution:
    """The effective window for one agent: the engine's report plus the agent's `num_ctx` pin,
    its `max_context_tokens` ceiling and the catalog's figure for the model's name."""
    warnings = list(report.warnings)
    pin = _setting(pinned, "num_ctx", warnings)
    cap = _setting(ceiling, "max_context_tokens", warnings)
    engine = report.provider
    served = check_reported(
        report.served, what="a served window", engine=engine, model=report.model
    )
    model_max = check_reported(
        report.model_max, what="a training length", engine=engine, model=report.model
    )
    catalog = _known(catalog_max)
    facts = _Facts(report.provider, report.model, served, model_max, catalog, warnings)

    if pin is not None and model_max is not None and pin > model_max:
        _warn_once(
            warnings,
            "training length",
            f"num_ctx {pin} is above {report.model}'s training length of {model_max} tokens: "
            "answers may degrade past it.",
        )

    if report.window_rule == "per-request":
        window, source = _ollama(facts, pin, report.modelfile_num_ctx)
    elif report.window_rule == "slot":
        window, source = _llamacpp(facts, pin, report)
    elif report.window_rule == "allocated":
        window, source = _embedded(facts, pin)
    else:  # vllm, sglang, and any OpenAI-compatible server that reports max_model_len
        window, source = _served_limit(facts, pin)

    if cap is not None and cap < window:
        window, source = cap, "ceiling"

    return WindowResolution(
        provider=report.provider,
        model=report.model,
        window=window,
        source=source,
        served=served,
        model_max=model_max,
        pinned=pin,
        ceiling=cap,
        slots=_known(report.slots),
        warnings=warnings,
        shared_pool=report.unified_pool,
        tool_calls=report.tool_calls,
        thinks=getattr(report, "thinks", None),
        notices=list(report.notices),
    )


@dataclass
class _Facts:
    provider: str
    model: str
    served: int | None
    model_max: int | None
    catalog: int | None
    warnings: list[str]


def _known(value: int | None) -> int | None:
    """Engines that do not say are not the same as engines that say 0: both become unknown."""
    if value is None or value <= 0:
        return None
    return int(value)


def _warn_once(warnings: list[str], topic: str, text: str) -> None:
    """Add a warning unless the engine's report already warns about the same topic."""
    if not any(topic in w for w in warnings):
        warnings.append(text)


def _setting(value: int | None, name: str, warnings: list[str]) -> int | None:
    if value is None:
        return None
    if value <= 0:
        warnings.append(f"{name} {value} is not a positive number of tokens: ignored.")
        return None
    return int(value)


def _pin(facts: _Facts, pin: int) -> tuple[int, WindowSource]:
    """A pin the server has not confirmed: honoured, unless the catalog says the model holds
    less. A server window at least as large, or the engine's own training length, vouches for
    the pin, and then the catalog (a name match) has no say."""
    vouched = (facts.served is not None and facts.served >= pin) or (
        facts.model_max is not None and facts.model_max >= pin
    )
    if not vouched and facts.catalog is not None and pin > facts.catalog:
        facts.warnings.append(
            f"num_ctx {pin} is above the {facts.catalog} tokens the model catalog lists for "
            f"{facts.model}, and the server has not confirmed it: accounting against "
            f"{facts.catalog}."
        )
        return facts.catalog, "catalog"
    return pin, "pinned"


def _unknown(facts: _Facts) -> tuple[int, WindowSource]:
    if facts.model_max is not None:
        return facts.model_max, "model-max"
    facts.warnings.append(
        f"{facts.provider} did not report a window for {facts.model}: assuming "
        f"{FALLBACK_WINDOW} tokens."
    )
    return FALLBACK_WINDOW, "fallback"


def _ollama(
    facts: _Facts, pin: int | None, modelfile_num_ctx: int | None
) -> tuple[int, WindowSource]:
    """A pin is sent as options.num_ctx on every request, so it is the runtime window. Without
    one, Ollama picks the size itself (Modelfile, then OLLAMA_CONTEXT_LENGTH, then a VRAM-based
    default) and tells it only once the model is loaded."""
    modelfile = _known(modelfile_num_ctx)
    if pin is not None:
        if facts.served is not None and facts.served != pin:
            facts.warnings.append(
                f"{facts.model} is loaded with a {facts.served}-token window; the first request "
                f"reloads it with num_ctx {pin}."
            )
        return _pin(facts, pin)

    if facts.served is not None:
        window = facts.served
        how = f"loaded now with {facts.served} tokens"
        if modelfile is not None:
            how += f"; its Modelfile sets num_ctx {modelfile}"
    elif modelfile is not None:
        # Unpinned requests carry no num_ctx, and the Modelfile outranks every server default.
        window = modelfile
        how = f"not loaded; its Modelfile sets num_ctx {modelfile}"
    else:
        window = min(OLLAMA_ASSUMED_WINDOW, facts.model_max or OLLAMA_ASSUMED_WINDOW)
        facts.warnings.append(
            f"Ollama has not loaded {facts.model} yet, so its window is unknown until the first "
            f"answer; until then Brim accounts against {window:,} tokens (Ollama's default on "
            "most machines). To make it exact, pin num_ctx in the agent (num_ctx = 8192 in the "
            "agent file, or Context window in the agent editor); Ollama reloads the model "
            "whenever num_ctx changes."
        )
        return window, "assumed"
    facts.warnings.append(
        f"Ollama chooses {facts.model}'s window itself ({how}); Brim accounts against {window} "
        "tokens. Pin num_ctx in the agent to make it exact (Ollama reloads the model whenever "
        "num_ctx changes)."
    )
    return window, "server"


def _llamacpp(facts: _Facts, pin: int | None, report: EngineReport) -> tuple[int, WindowSource]:
    """/props gives the per-slot n_ctx; a pin only changes Brim's accounting."""
    if report.unified_pool and facts.served is not None:
        slots = _known(report.slots)
        who = f"llama-server's {slots} slots share" if slots else "llama-server's slots share"
        _warn_once(
            facts.warnings,
            "KV pool",
            f"{who} one KV pool: a request may get fewer than {facts.served} tokens while "
            "other slots are busy.",
        )
    if pin is not None:
        if facts.served is not None and pin > facts.served:
            # The server rejects anything past its slot, whatever Brim accounts against;
            # the pin's refusal is told as a notice with its cause (LlamaCppProvider.report).
            return facts.served, "server"
        return _pin(facts, pin)
    if facts.served is not None:
        return facts.served, "server"
    return _unknown(facts)


def _served_limit(facts: _Facts, pin: int | None) -> tuple[int, WindowSource]:
    """vLLM and SGLang fix max_model_len at start; a pin can only account for less."""
    if facts.served is not None:
        if pin is None:
            return facts.served, "server"
        if pin > facts.served:
            facts.warnings.append(
                f"num_ctx {pin} is above the server's max_model_len of {facts.served}: the pin "
                "is ignored."
            )
            return facts.served, "server"
        return pin, "pinned"
    if pin is not None:
        return _pin(facts, pin)
    return _unknown(facts)


def _embedded(facts: _Facts, pin: int | None) -> tuple[int, WindowSource]:
    """The embedded engine allocates the pin or the training length; n_ctx() says what it got."""
    if facts.served is not None:
        if pin is not None:
            if facts.served < pin:
                facts.warnings.append(
                    f"The embedded engine allocated {facts.served} tokens, less than num_ctx {pin}."
                )
                return facts.served, "server"
            return pin, "pinned"
        if facts.model_max is not None and facts.served == facts.model_max:
            return facts.served, "model-max"
        return facts.served, "server"
    if pin is not None:
        return _pin(facts, pin)
    return _unknown(facts)
