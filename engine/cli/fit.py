"""`brim fit`: what a model costs in memory at a window, from its GGUF, before it is loaded."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from engine.cli.errors import CliError
from engine.fit.estimate import FitRequest
from engine.fit.kv import KV_TYPES
from engine.fit.report import FitReport, FitUnavailable, fit_report
from engine.providers.errors import ProviderError

DEFAULT_NUM_CTX = 4096
LLAMA_SERVER_AUTO_SLOTS = 4
_MIB = 1024 * 1024


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is below 1")
    return n


def _layers(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number (-1: all)") from None


def add_fit_parser(sub: Any) -> None:
    fit = sub.add_parser("fit", help="estimate a model's memory at a window, from its GGUF")
    fit.add_argument("--model", metavar="PATH_OR_NAME")
    fit.add_argument(
        "--discover",
        action="store_true",
        help="list the GGUF files of LM Studio, GPT4All, Jan, llama.cpp's and the Hugging "
        "Face caches (and --folder), each with its estimate at --num-ctx",
    )
    fit.add_argument("--folder", action="append", default=[], metavar="DIR", type=Path)
    fit.add_argument(
        "--provider",
        choices=("embedded", "ollama", "llamacpp"),
        default="embedded",
        help="whose allocation: the embedded engine (llama-cpp-python: a full-size sliding-"
        "window cache), Ollama, or llama-server (-m PATH: a sliding-window cache of the "
        "window's size unless --swa-full)",
    )
    fit.add_argument("--base-url", help="Ollama's address (default http://127.0.0.1:11434)")
    fit.add_argument("--num-ctx", type=_positive, default=DEFAULT_NUM_CTX, help="llama-server: -c")
    fit.add_argument("--kv-cache-type", choices=KV_TYPES, default="f16")
    fit.add_argument(
        "--slots",
        type=_positive,
        default=None,
        help="parallel sequences (llama-server: -np; without it, llama-server's auto: 4 slots "
        "sharing one cache of --num-ctx cells); default 1 elsewhere",
    )
    fit.add_argument("--swa-full", action="store_true", help="llama-server's --swa-full")
    fit.add_argument("--gpu-layers", type=_layers, default=-1, help="-1 (default): all")
    fit.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto")
    fit.add_argument("--json", action="store_true", help="print one JSON object")


async def _ollama_blob(model: str, base_url: str | None) -> str:
    from engine.providers.ollama import OllamaProvider
    from engine.providers.ollama_answers import runs_here

    provider = OllamaProvider(base_url)
    try:
        blob = await provider.show_blob(model)
        here = runs_here(provider.base_url)
    finally:
        await provider.aclose()
    if not here:
        raise CliError(f"Ollama runs on another machine ({base_url}): its GGUF is not here")
    if blob is None:
        raise CliError(f"Ollama's /api/show names no model file for {model} (no FROM path)")
    return blob


def model_path(args: argparse.Namespace) -> str:
    if args.provider == "ollama":
        try:
            return asyncio.run(_ollama_blob(args.model, args.base_url))
        except ProviderError as exc:
            raise CliError(exc.message) from None
    from engine.providers.embedded import resolve_model_path
    from engine.providers.errors import ModelNotFound

    try:
        return resolve_model_path(args.model)
    except ModelNotFound as exc:
        raise CliError(str(exc)) from None


def _lines(report: FitReport) -> list[str]:
    e = report.estimate.public()
    m = report.facts
    mib = lambda n: f"{n / _MIB:,.1f} MiB"  # noqa: E731
    free = e["gpu_free_bytes"]
    largest = ", ".join(
        f"{t} {v:,}" if v is not None else f"{t} unknown"
        for t, v in e["max_num_ctx_on_gpu"].items()
    )
    return [
        f"{m.name or m.architecture} ({m.architecture}, {m.quantization}) at num_ctx "
        f"{e['num_ctx']:,}, KV {e['kv_cache_type']}, {e['slots']} slot(s)",
        f"  weights {mib(e['weights_bytes'])}, KV cache {mib(e['kv_bytes'])}, "
        f"compute {mib(e['compute_bytes'])}: total {mib(e['total_bytes'])}",
        f"  GPU free: {mib(free) if free is not None else 'unknown (no NVIDIA driver answered)'}",
        f"  verdict: {e['verdict']}; largest num_ctx on the GPU: {largest}",
    ]


def _discover(args: argparse.Namespace, request: FitRequest) -> int:
    from engine.fit.discovery import discover, model_folders
    from engine.fit.gpu import gpu_free_bytes

    folders = model_folders(extra=args.folder)
    found = discover(folders, request, gpu_free=gpu_free_bytes())
    if args.json:
        print(json.dumps({
            "folders": [{"source": f.source, "path": str(f.path)} for f in folders],
            "models": [m.to_json() for m in found],
        }))  # fmt: skip
        return 0
    for m in found:
        if m.readable and m.details is not None:
            d = m.details
            print(f"{m.path}: {d['architecture']} {d['size_label'] or ''} {d['quantization']}, "
                  f"trained to {d['training_context']}, {d['estimate']['total_bytes'] / _MIB:,.0f}"
                  f" MiB at {request.num_ctx:,}")  # fmt: skip
        else:
            print(f"{m.path}: unreadable: {m.reason}")
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    if args.model is None and not args.discover:
        raise CliError("fit needs --model PATH_OR_NAME (or --discover to list the GGUFs found)")
    embedded, server = args.provider == "embedded", args.provider == "llamacpp"
    # llama-server without -np: n_parallel auto, 4 slots in one unified cache (its source,
    # tools/server/server.cpp); with -np N, N streams of num_ctx / N cells each.
    auto_slots = server and args.slots is None
    request = FitRequest(
        num_ctx=args.num_ctx,
        kv_cache_type=args.kv_cache_type,
        slots=LLAMA_SERVER_AUTO_SLOTS if auto_slots else (args.slots or 1),
        gpu_layers=args.gpu_layers,
        flash_attn=args.flash_attn != "off",
        unified=auto_slots,
        # the embedded engine is llama-cpp-python: a full-size window cache, all logits
        swa_full=embedded or (server and args.swa_full),
        all_logits=embedded,
    )
    if args.kv_cache_type != "f16" and args.flash_attn == "off":
        raise CliError(
            f"--kv-cache-type {args.kv_cache_type} quantizes the V cache, which llama.cpp "
            "does only with flash attention: use --flash-attn auto or on"
        )
    if args.discover:
        return _discover(args, request)
    path = model_path(args)
    try:
        report = fit_report(path, request)
    except FitUnavailable as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps({"provider": args.provider, **report.public()}))
    else:
        print("\n".join(_lines(report)))
    return 0
