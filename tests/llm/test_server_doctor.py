"""check_server and `soothe doctor` against the fake servers (and none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from soothe.engine.config import ModelSettings, Settings, StorageSettings
from soothe.engine.llm.doctor import PROBE_PROMPT, run_doctor
from soothe.engine.llm.errors import ModelErrorKind
from soothe.engine.llm.server import check_server
from tests.fakes import FakeHTTPError, FakeOllamaModel, FakeOllamaServer, FakeOpenAIServer
from tests.fakes.openai_server import Flavor


def make_settings(tmp_path: Path, **model: object) -> Settings:
    return Settings(
        model=ModelSettings(**model),  # type: ignore[arg-type]
        storage=StorageSettings(data_dir=tmp_path / "data"),
    )


def doctor(settings: Settings, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run_doctor(settings)
    return code, capsys.readouterr().out


async def test_check_server_reports_version_models_and_tools(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("qwen2.5:7b")
    status = await check_server(
        ModelSettings(name="llama3.2", fast_name="qwen2.5:7b", base_url=fake_ollama.url)
    )
    assert status.ok
    assert status.reachable
    assert status.version == "0.6.3"
    assert status.models == ["llama3.2:latest", "qwen2.5:7b"]
    assert status.model_present and status.fast_model_present
    assert status.tools is True
    assert status.error is None


def test_doctor_model_present(
    fake_ollama: FakeOllamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_ollama.extend(["ok"])
    code, out = doctor(make_settings(tmp_path, name="llama3.2", base_url=fake_ollama.url), capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "soothe doctor"
    assert f"  base URL     {fake_ollama.url}" in lines
    assert "  server       reachable, version 0.6.3" in lines
    assert "  model        llama3.2 (present)" in lines
    assert "  tool calls   supported" in lines
    assert any(line.startswith("  config file  none, using defaults") for line in lines)
    assert any(line.startswith("  data dir") and "will be created" in line for line in lines)
    assert any(line.startswith("  chat call    llama3.2 answered in") for line in lines)
    assert lines[-1] == "ok: soothe can run with llama3.2"
    (call,) = fake_ollama.chat_requests()  # one real call, through the client a run uses
    assert call["messages"][-1]["content"] == PROBE_PROMPT
    assert call["options"]["num_predict"] > 0


def test_doctor_model_missing(
    fake_ollama: FakeOllamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path, name="qwen2.5:7b", base_url=fake_ollama.url)
    code, out = doctor(settings, capsys)
    assert code == 1
    assert "  models       llama3.2:latest" in out
    assert "  model        qwen2.5:7b (MISSING)" in out
    assert "problem: model 'qwen2.5:7b' not installed in Ollama" in out
    assert "fix:     ollama pull qwen2.5:7b" in out


def test_doctor_model_without_tools(
    fake_ollama: FakeOllamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_ollama.add_model(FakeOllamaModel("gemma:2b", tools=False))
    code, out = doctor(make_settings(tmp_path, name="gemma:2b", base_url=fake_ollama.url), capsys)
    assert code == 1
    assert "  tool calls   NOT supported" in out
    assert "fix:     choose a tool-capable model" in out


def test_doctor_server_down(
    dead_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = doctor(make_settings(tmp_path, base_url=dead_url), capsys)
    assert code == 1
    assert "  server       NOT reachable" in out
    assert f"problem: cannot reach Ollama at {dead_url}" in out
    assert "fix:     start Ollama: ollama serve" in out


def test_doctor_uses_ollama_host(
    fake_ollama: FakeOllamaServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{fake_ollama.port}")
    fake_ollama.extend(["ok"])
    code, out = doctor(make_settings(tmp_path, name="llama3.2"), capsys)
    assert code == 0
    assert f"base URL     http://127.0.0.1:{fake_ollama.port}" in out


def test_doctor_demo_needs_no_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = doctor(make_settings(tmp_path, provider="demo"), capsys)
    assert code == 0
    assert "demo model (built in; no server is needed)" in out
    assert "base URL" not in out
    assert out.splitlines()[-1] == "ok: soothe can run with the demo model"


def test_doctor_openai_compatible(
    fake_openai: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = f"{fake_openai.url}/v1"
    fake_openai.extend(["ok"])
    code, out = doctor(
        make_settings(tmp_path, provider="openai", name="llama3.2", base_url=base), capsys
    )
    assert code == 0
    assert "  model        llama3.2 (present)" in out
    assert "  chat call    llama3.2 answered in" in out
    assert len(fake_openai.chat_requests()) == 1
    code, out = doctor(
        make_settings(tmp_path, provider="openai", name="gpt-9", base_url=base), capsys
    )
    assert code == 1
    assert "fix:     set model.name to one of: llama3.2" in out


async def test_check_server_bad_key(tmp_path: Path) -> None:
    with FakeOpenAIServer(api_key="sk-right") as server:
        status = await check_server(
            ModelSettings(
                provider="openai", name="llama3.2", base_url=f"{server.url}/v1", api_key="x"
            )
        )
    assert not status.ok
    assert status.kind == ModelErrorKind.bad_credentials
    assert status.fix is not None and "OPENAI_API_KEY" in status.fix


def test_doctor_unwritable_data_dir(
    fake_ollama: FakeOllamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    settings = Settings(
        model=ModelSettings(name="llama3.2", base_url=fake_ollama.url),
        storage=StorageSettings(data_dir=blocker),
    )
    code, out = doctor(settings, capsys)
    assert code == 1
    assert "set storage.data_dir to a writable directory" in out


async def test_doctor_runs_inside_an_event_loop(
    fake_ollama: FakeOllamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_ollama.extend(["ok"])
    code, out = doctor(make_settings(tmp_path, name="llama3.2", base_url=fake_ollama.url), capsys)
    assert code == 0
    assert "ok:" in out


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_doctor_fails_when_the_model_cannot_answer(
    fake_ollama: FakeOllamaServer,
    fake_openai: FakeOpenAIServer,
    provider: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server lists the model, but a chat call fails: doctor says so (it said ok)."""
    fake = fake_ollama if provider == "ollama" else fake_openai
    fake.extend([FakeHTTPError(500, "llama runner process has terminated: signal: killed")])
    base = fake.url if provider == "ollama" else f"{fake.url}/v1"
    settings = make_settings(tmp_path, provider=provider, name="llama3.2", base_url=base)
    code, out = doctor(settings, capsys)
    assert code == 1
    assert "  chat call    llama3.2 FAILED" in out
    problem = next(line for line in out.splitlines() if line.startswith("problem:"))
    assert problem.startswith("problem: a chat call failed: ")
    assert "ok:" not in out
    assert len(fake.chat_requests()) == 1  # one try: a report does not retry


@pytest.mark.parametrize(
    ("flavor", "line"),
    [
        ("vllm", "  window       4096 tokens (/v1/models max_model_len)"),
        ("llamacpp", "  window       4096 tokens (/props n_ctx; trained 131072)"),
        (
            "lmstudio",
            "  window       4096 tokens (/api/v0/models loaded_context_length; trained 131072)",
        ),
        (
            "openai",
            "  window       8192 tokens (assumed (the server does not report it; "
            "set model.context_window))",
        ),
    ],
)
def test_doctor_prints_the_window_each_openai_server_reports(
    flavor: Flavor, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(flavor=flavor, window=4096, trained=131072, api_key="sk-k") as server:
        server.extend(["ok"])
        code, out = doctor(
            make_settings(
                tmp_path,
                provider="openai",
                name="llama3.2",
                base_url=f"{server.url}/v1",
                api_key="sk-k",
            ),
            capsys,
        )
    assert code == 0, out
    assert line in out.splitlines()


def test_doctor_window_from_config_and_demo(
    fake_openai: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.extend(["ok"])
    base = f"{fake_openai.url}/v1"
    settings = make_settings(
        tmp_path, provider="openai", name="llama3.2", base_url=base, context_window=16384
    )
    code, out = doctor(settings, capsys)
    assert code == 0
    assert "  window       16384 tokens (model.context_window)" in out.splitlines()
    code, out = doctor(make_settings(tmp_path, provider="demo"), capsys)
    assert code == 0
    assert "  window       131072 tokens (demo)" in out.splitlines()
