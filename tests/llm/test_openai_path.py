"""The OpenAI-compatible path as a user runs it: `soothe` as a subprocess against the fake
OpenAI server, on whichever `openai` major the lock installed (3.x moved to httpx2 and
refused the httpx.Timeout we passed: every request failed while `doctor` said ok)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.fakes import FakeHTTPError, FakeOpenAIServer
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, brain, env, fake

__all__ = ["brain", "env", "fake"]  # fixtures: an isolated home and workspace


@pytest.fixture
def server(brain: Brain) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=brain, hang_limit=5.0) as fake:
        yield fake
    assert not fake.errors, "\n".join(fake.errors)


def run(env: Env, server: FakeOpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    options = ["--provider", "openai", "--base-url", f"{server.url}/v1", "--model", "llama3.2"]
    options += ["--data-dir", str(env.data_dir)]
    return subprocess.run(
        [sys.executable, "-m", "soothe", *args, *options],
        cwd=env.workspace,
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_request_is_answered(env: Env, brain: Brain, server: FakeOpenAIServer) -> None:
    brain.add("Classification", {"label": "quiz", "answer": "42", "reason": "arithmetic"})
    result = run(env, server, "-p", "What is 6*7?", "--workspace", str(env.workspace))
    assert (result.returncode, result.stdout.strip()) == (0, "42"), result.stderr
    assert len(server.chat_requests()) == 1


def test_doctor_makes_a_real_call(env: Env, brain: Brain, server: FakeOpenAIServer) -> None:
    brain.add("text", "ok")
    result = run(env, server, "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "  chat call    llama3.2 answered in" in result.stdout
    assert len(server.chat_requests()) == 1


def test_doctor_fails_when_calls_fail(env: Env, server: FakeOpenAIServer) -> None:
    """The server lists the model (GET /v1/models) but every chat call fails."""
    server.extend([FakeHTTPError(500, "the model crashed")])
    result = run(env, server, "doctor")
    assert result.returncode == 1
    assert "  chat call    llama3.2 FAILED" in result.stdout
    assert "ok:" not in result.stdout
