"""What a model costs in memory, read from its GGUF before it is loaded.

header.py    the GGUF's keys and tensor table, no weights (gguf's types and sizes)
facts.py     the model's shape as llama.cpp reads it (layers, heads, windows, vocabulary)
kv.py        the KV cache llama.cpp allocates for a window, KV type and slot count
weights.py   the weights on each device for a number of offloaded layers
compute.py   the compute buffers, an allowance measured against llama.cpp
gpu.py       the GPU memory free now (NVML), or None: never a guess
estimate.py  the whole: per device, a verdict, the largest window that stays on the GPU
"""
