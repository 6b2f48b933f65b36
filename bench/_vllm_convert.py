"""Turn the bundled SmolLM2 GGUF into the safetensors folder a real vLLM serves.

vLLM serves no GGUF on the CPU, so `make vllm-setup` runs this once, with the Python of
`.venv-vllm` (transformers, gguf and accelerate come with that environment, not with Brim's):

    .venv-vllm/bin/python bench/_vllm_convert.py GGUF_FILE OUT_DIR

transformers dequantizes the GGUF (Q4_1) to float32 and writes the weights, the config, the
tokenizer and SmolLM2's chat template. The folder is written beside its final name and moved
into place, so a half-written model is never served.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path


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
