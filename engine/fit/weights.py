"""Which weights sit on which device for `gpu_layers` offloaded layers, as llama.cpp places
them (src/llama-model.cpp, load_tensors): the last `gpu_layers` blocks go to the GPU; the
output head counts as one more layer, offloaded only when `gpu_layers > block_count`; the
token embedding stays on the CPU (a tied head is copied to the GPU when the head goes there).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.fit.facts import ModelFacts


@dataclass(frozen=True)
class Placement:
    gpu_layers: int  # blocks on the GPU, 0..n_layer
    output_on_gpu: bool

    def on_gpu(self, facts: ModelFacts, il: int) -> bool:
        return il >= facts.n_layer - self.gpu_layers


def all_layers(facts: ModelFacts) -> int:
    """The `gpu_layers` that offloads everything (llama.cpp's -ngl 999 / -1)."""
    return facts.n_layer + 1


def placement(facts: ModelFacts, gpu_layers: int | None) -> Placement:
    """`gpu_layers` None or negative: all of them."""
    if gpu_layers is None or gpu_layers < 0:
        gpu_layers = all_layers(facts)
    return Placement(min(gpu_layers, facts.n_layer), gpu_layers > facts.n_layer)


def weight_bytes(facts: ModelFacts, where: Placement) -> tuple[int, int]:
    """(GPU bytes, CPU bytes) of the weights."""
    gpu = sum(b for il, b in enumerate(facts.layer_bytes) if where.on_gpu(facts, il))
    cpu = sum(facts.layer_bytes) - gpu + facts.input_bytes
    if where.output_on_gpu:
        gpu += facts.output_bytes + (facts.input_bytes if facts.tied_output else 0)
    else:
        cpu += facts.output_bytes
    return gpu, cpu
