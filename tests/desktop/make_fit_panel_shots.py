"""The agent editor's fit panel for the README: the bundled SmolLM2 at three free-memory
figures (fits, spills, unknown), three PNGs. The estimates are the engine's own
(engine/fit, through engine/api.fit_for_agent); only the free-memory figure is given, as this
machine has no NVIDIA driver.

    xvfb-run -a python -m tests.desktop.make_fit_panel_shots [OUT_DIR]
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from desktop.app import ensure_application
from desktop.fit_panel import FitPanel
from engine.api import AgentConfig, AgentFit, fit_for_agent

DEFAULT_OUT = Path("docs/screenshots")
MIB = 1024 * 1024
SHOTS = {  # name -> (pin, free GPU memory)
    "fit-panel-fits": (4096, 1024 * MIB),
    "fit-panel-spills": (8192, 300 * MIB),
    "fit-panel-unknown": (8192, None),
}


def fit_at(num_ctx: int, gpu_free: int | None) -> AgentFit:
    agent = AgentConfig(name="smol", num_ctx=num_ctx)
    return asyncio.run(fit_for_agent(agent, gpu_free=gpu_free))


def fit_panel_shots(out: Path) -> list[Path]:
    ensure_application()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (num_ctx, free) in SHOTS.items():
        panel = FitPanel()
        panel.resize(520, 220)
        panel.show_fit(fit_at(num_ctx, free))
        panel.show()
        path = out / f"{name}.png"
        panel.grab().save(str(path))
        panel.close()
        written.append(path)
    return written


if __name__ == "__main__":
    for p in fit_panel_shots(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(p)
