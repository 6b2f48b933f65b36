"""How the real llama-server is made to reason with the bundled SmolLM2: a GBNF grammar that
forces a `<think>` block before every answer and a chat template that renders an assistant
message's `reasoning_content` (both under tests/integration/data), with the server's
`--reasoning-format` and answer cap. Shared by the integration tests and the screenshot."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "integration" / "data"


def reasoning_server_args(reasoning_format: str = "deepseek", n_predict: int = 96) -> list[str]:
    """The extra llama-server arguments that make it reason."""
    return [
        "--jinja",
        "--chat-template-file",
        str(DATA / "chatml_reasoning.jinja"),
        "--grammar-file",
        str(DATA / "think_first.gbnf"),
        "--reasoning-format",
        reasoning_format,
        "-n",
        str(n_predict),
    ]
