"""The estimate against a real GPU: load a GGUF with every layer offloaded and compare what
`engine/fit` predicts with what NVML reports before and after the load, and with llama.cpp's
own buffer lines. Needs llama-cpp-python built with CUDA (`make run GPU=cuda` does it).

    python -m bench.gpu_fit_check [--model PATH_OR_NAME] [--num-ctx N] [--kv-cache-type T]

Prints one JSON object. Without an NVIDIA driver it says so (`"gpu": null`) and stops.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

from engine.fit.estimate import FitRequest, estimate
from engine.fit.gpu import gpu_devices, ram_available_bytes
from engine.fit.report import read_facts
from engine.providers.embedded import resolve_model_path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None)
    parser.add_argument("--num-ctx", type=int, default=8192)
    parser.add_argument("--kv-cache-type", default="f16", choices=("f16", "q8_0", "q4_0"))
    args = parser.parse_args()
    path = resolve_model_path(args.model)
    before = gpu_devices()
    out: dict[str, object] = {"model_path": path, "num_ctx": args.num_ctx}
    if not before:
        print(json.dumps({**out, "gpu": None, "why": "no NVIDIA driver answered NVML"}))
        return 0
    facts = read_facts(path)
    request = FitRequest(args.num_ctx, args.kv_cache_type, gpu_layers=-1, swa_full=True,
                         all_logits=True)  # fmt: skip
    e = estimate(facts, request, gpu_free=before[0].free_bytes, ram=ram_available_bytes())

    import llama_cpp.llama_cpp as native
    from llama_cpp import Llama

    from engine.providers.embedded_load_log import captured_load_log, placement

    kv = getattr(native, f"GGML_TYPE_{args.kv_cache_type.upper()}")
    with captured_load_log() as log:
        llm = Llama(model_path=path, n_ctx=args.num_ctx, n_gpu_layers=-1, flash_attn=True,
                    type_k=kv, type_v=kv, verbose=False)  # fmt: skip
    time.sleep(1.0)
    after = gpu_devices() or before
    used = before[0].free_bytes - after[0].free_bytes
    loaded = placement(log.text())
    llm.close()
    print(json.dumps({
        **out,
        "gpu": before[0].name,
        "nvml_free_before": before[0].free_bytes,
        "nvml_free_after": after[0].free_bytes,
        "nvml_used_by_load": used,
        "estimate_gpu_bytes": e.gpu_bytes,
        "estimate_kv_bytes": e.kv_bytes,
        "estimate_vs_nvml": round(e.gpu_bytes / used, 3) if used > 0 else None,
        "llama_cpp": loaded.to_json(),
        "llama_cpp_kv_bytes": sum(loaded.kv_bytes.values()),
        "estimate": replace(e, max_num_ctx_on_gpu={}).public(),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
