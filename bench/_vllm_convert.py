"""Turn the bundled SmolLM2 GGUF into the safetensors folder a real vLLM serves.

vLLM serves no GGUF on the CPU, so `make vllm-setup` runs this once, with the Python of
`.venv-vllm` (transformers, gguf and accelerate come with that environment, not with Brim's):

    .venv-vllm/bin/python bench/_vllm_convert.py GGUF_FILE OUT_DIR

transformers dequantizes the GGUF (Q4_1) to float32 and writes the weights, the config, the
tokenizer and SmolLM2's chat template, then a `generation_config.json` carrying Brim's measured
sampling for this model (engine/providers/sampling.py): vLLM (`--generation-config auto`, its
default) applies it to every field a request leaves out, so the folder samples SmolLM2 as Brim
does whoever asks. The folder is written beside its final name and moved into place, so a
half-written model is never served.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

# Run with .venv-vllm's Python, where Brim is not installed: its sampling module (standard
# library only) is read from this checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.providers.sampling import BRIM_DEFAULTS, Sampling

# Brim's names to generation_config.json's (transformers' GenerationConfig, which vLLM reads:
# repetition_penalty, temperature, top_k, top_p, min_p).
_GENERATION_NAMES = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "repeat_penalty": "repetition_penalty",
}


def write_generation_config(folder: Path, sampling: Sampling = BRIM_DEFAULTS) -> dict[str, Any]:
    """Add `sampling` to the folder's generation_config.json (kept: what transformers wrote
    there, such as the BOS and EOS ids); returns what the file holds now. `do_sample` is true
    so transformers takes the file as it is (at temperature 0 vLLM samples greedily)."""
    path = folder / "generation_config.json"
    config: dict[str, Any] = json.loads(path.read_text("utf-8")) if path.is_file() else {}
    for name, key in _GENERATION_NAMES.items():
        value = getattr(sampling, name)
        if value is not None:
            config[key] = value
    config["do_sample"] = True
    path.write_text(json.dumps(config, indent=2) + "\n", "utf-8")
    return config


def convert(gguf: Path, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # Kept in GGUF blocks (the default), the model refuses to be saved: unpacked, it is a plain
    # float32 checkpoint.
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent),
        gguf_file=gguf.name,
        quantization_config=GgufConfig(dequantize=True),
        dtype="float32",
    )
    model.save_pretrained(str(partial), safe_serialization=True)
    tokenizer.save_pretrained(str(partial))
    write_generation_config(partial)
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    gguf, out = Path(argv[0]), Path(argv[1])
    started = time.monotonic()
    convert(gguf, out)
    print(f"converted {gguf.name} to {out} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
