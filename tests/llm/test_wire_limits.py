"""What a real local server accepts: schema bounds, reply limits, a crashed runner, and
the small-model profile. Everything goes through the real ChatOllama / ChatOpenAI
clients to the fake servers, which refuse what a real Ollama refuses."""

from __future__ import annotations

import ast
import importlib
import io
from pathlib import Path
from typing import Annotated

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field, StringConstraints

import soothe
from soothe.engine.config import ModelSettings, Settings
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.llm.hub import CUT_NOTE, ModelHub
from soothe.engine.llm.profile import (
    ModelInfo,
    choose_profile,
    model_info_from_show,
    parameter_billions,
    resolve_profile,
)
from soothe.engine.llm.schema import (
    GRAMMAR_BOUND_LIMIT,
    UnboundedSchemaError,
    bounded_json_schema,
    max_bound,
)
from tests.fakes import FakeHTTPError, FakeOllamaModel, FakeOllamaServer, FakeOpenAIServer
from tests.fakes.ollama_server import GRAMMAR_ERROR, RUNNER_TERMINATED
from tests.llm.conftest import fast_hub

Q = [HumanMessage(content="question")]
SRC = Path(soothe.__file__).parent


# --- every schema the product sends ---------------------------------------------------------


def _structured_schemas() -> dict[str, type[BaseModel]]:
    """Every schema class the product passes to a structured call: found in the source
    (the schema argument of ``.structured(...)`` / the planner's ``._ask(...)``), plus
    every model-facing class of loop/schemas.py (those carry a ``title``)."""
    found: dict[str, type[BaseModel]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("structured", "_ask"):
                continue
            args = [*node.args[:2], *(k.value for k in node.keywords if k.arg == "schema")]
            names |= {a.id for a in args if isinstance(a, ast.Name)}
        if not names:
            continue
        module = importlib.import_module(
            ".".join(("soothe", *path.relative_to(SRC).with_suffix("").parts))
        )
        for name in names:
            value = getattr(module, name, None)
            if isinstance(value, type) and issubclass(value, BaseModel):
                found[value.__name__] = value
    from soothe.engine.loop import schemas

    for value in vars(schemas).values():
        if (
            isinstance(value, type)
            and issubclass(value, BaseModel)
            and value.__module__ == schemas.__name__
            and value.model_config.get("title")
        ):
            found[value.__name__] = value
    return found


async def test_no_schema_or_tool_the_product_sends_has_a_bound_of_1000_or_more(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub, capsys: pytest.CaptureFixture[str]
) -> None:
    from soothe.engine.agent.tools import tool_specs

    schemas = _structured_schemas()
    assert {"Classification", "StatusAssessment", "PlanGeneration", "GoalDecomposition"} <= set(
        schemas
    )
    for schema in schemas.values():
        fake_ollama.extend(["{}"])
        await ollama_hub.structured(Q, schema, retries=0)
    specs = tool_specs()
    fake_ollama.extend(["done"])
    await ollama_hub.stream_text(Q, tools=list(specs))
    chats = fake_ollama.chat_requests()
    formats = [c["format"] for c in chats if isinstance(c.get("format"), dict)]
    sent_tools = chats[-1]["tools"]
    assert len(formats) == len(schemas)
    assert len(sent_tools) == len(specs)
    bounds = {
        **{s: max_bound(f) for s, f in zip(schemas, formats, strict=True)},
        **{t["function"]["name"]: max_bound(t) for t in sent_tools},
    }
    too_big = {name: b for name, b in bounds.items() if b >= GRAMMAR_BOUND_LIMIT}
    assert not too_big, too_big
    with capsys.disabled():
        print(
            f"\n[grammar bounds] {len(formats)} structured schemas + {len(sent_tools)} tool "
            f"specs checked on the wire; largest bound {max(bounds.values())} "
            f"({max(bounds, key=lambda k: bounds[k])})"
        )


def test_a_tool_keeps_validating_the_bounds_it_no_longer_sends() -> None:
    from soothe.engine.agent.tools import WriteFileArgs

    with pytest.raises(ValueError, match="at most 200000"):
        WriteFileArgs(path="a.txt", content="x" * 200_001)


def test_a_structured_schema_with_a_large_bound_is_refused_before_it_is_sent() -> None:
    class Essay(BaseModel):
        text: Annotated[str, StringConstraints(max_length=1500)]

    with pytest.raises(UnboundedSchemaError, match="maxLength 1500 is too large"):
        bounded_json_schema(Essay)


class Long(BaseModel):
    # Built by hand below (bounded_json_schema would refuse it): what a real Ollama does.
    text: str = Field(max_length=2000)


async def test_the_fake_server_refuses_a_2000_bound_like_ollama(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    from langchain_ollama import ChatOllama
    from ollama import ResponseError

    model = ChatOllama(model="llama3.2", base_url=fake_ollama.url)
    with pytest.raises(ResponseError) as info:
        await model.bind(format=Long.model_json_schema()).ainvoke(Q)
    assert info.value.status_code == 500
    assert GRAMMAR_ERROR in str(info.value)
    ok = {"type": "object", "properties": {"t": {"type": "string", "maxLength": 1999}}}
    fake_ollama.extend(['{"t": "x"}'])
    assert (await model.bind(format=ok).ainvoke(Q)).text == '{"t": "x"}'

    runnable = ollama_hub._bind_schema(ollama_hub.chat_model(), "Long", Long.model_json_schema())
    with pytest.raises(LLMError) as err:
        await ollama_hub._call(runnable, Q, role="default", ids=None, on_token=None)
    assert err.value.kind == ModelErrorKind.bad_request
    assert "could not compile the reply schema" in str(err.value)
    assert len(fake_ollama.chat_requests()) == 3, "a grammar failure is not retried"


# --- reply limits ---------------------------------------------------------------------------


async def test_num_predict_per_call_role_on_the_ollama_wire(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    from soothe.engine.loop.schemas import Classification, PlanGeneration, StatusAssessment

    fake_ollama.extend(
        [
            '{"label": "quiz", "answer": "4", "reason": ""}',
            '{"status": "done", "goal_progress": "complete"}',
            '{"steps": [{"id": "S1", "description": "d"}]}',
            "step answer",
            "final answer",
        ]
    )
    await ollama_hub.structured(Q, Classification)
    await ollama_hub.structured(Q, StatusAssessment)
    await ollama_hub.structured(Q, PlanGeneration)
    await ollama_hub.stream_text(Q)
    await ollama_hub.stream_text(Q, purpose="final")
    options = [c["options"] for c in fake_ollama.chat_requests()]
    limits = ModelSettings().num_predict
    assert [o["num_predict"] for o in options] == [
        limits.classify,
        limits.assess,
        limits.plan,
        limits.step,
        limits.final,
    ]
    assert limits.classify < limits.plan and limits.assess < limits.step
    assert all(o["num_ctx"] == 8192 and o["temperature"] == 0.2 for o in options)


async def test_num_predict_is_configurable_and_zero_sends_none(
    fake_ollama: FakeOllamaServer,
) -> None:
    settings = Settings(
        model={
            "name": "llama3.2",
            "base_url": fake_ollama.url,
            "num_predict": {"step": 0, "final": 99},
        }
    )
    hub = fast_hub(settings.model, None)
    fake_ollama.extend(["a", "b"])
    await hub.stream_text(Q)
    await hub.stream_text(Q, purpose="final")
    first, second = fake_ollama.chat_requests()
    assert "num_predict" not in (first.get("options") or {})
    assert second["options"]["num_predict"] == 99


async def test_max_tokens_on_the_openai_wire(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    from soothe.engine.loop.schemas import StatusAssessment

    fake_openai.extend(["hello", '{"status": "done", "goal_progress": "complete"}'])
    await openai_hub.stream_text(Q, purpose="final")
    assert fake_openai.last_chat()["max_tokens"] == ModelSettings().num_predict.final
    result = await openai_hub.structured(Q, StatusAssessment)
    assert result.ok
    body = fake_openai.last_chat()
    assert body["max_tokens"] == ModelSettings().num_predict.assess
    assert body["response_format"]["type"] == "json_schema", "the schema binding is kept"


async def test_a_reply_cut_at_num_predict_says_so(fake_ollama: FakeOllamaServer) -> None:
    settings = ModelSettings(name="llama3.2", base_url=fake_ollama.url, num_predict={"step": 5})
    hub = fast_hub(settings, None)
    fake_ollama.extend(["one two three four five six seven eight nine ten eleven twelve"])
    pieces: list[str] = []
    reply = await hub.stream_text(Q, on_token=pieces.append)
    assert reply.response_metadata["done_reason"] == "length"
    assert reply.text.startswith("one two three four f")
    assert "twelve" not in reply.text
    assert reply.text.endswith(CUT_NOTE)
    assert "".join(pieces).endswith(CUT_NOTE), "the streamed text says it too"

    fake_ollama.extend(["short"])
    whole = await hub.stream_text(Q)
    assert whole.text == "short"


async def test_a_structured_reply_cut_at_num_predict_is_not_trusted(
    fake_ollama: FakeOllamaServer,
) -> None:
    from soothe.engine.loop.schemas import PlanGeneration

    settings = ModelSettings(name="llama3.2", base_url=fake_ollama.url, num_predict={"plan": 12})
    hub = fast_hub(settings, None)
    two_steps = (
        '{"steps": [{"id": "S1", "description": "read the file"}, '
        '{"id": "S2", "description": "write the summary"}]}'
    )
    fake_ollama.extend([two_steps, two_steps])
    result = await hub.structured(Q, PlanGeneration, retries=1)
    assert result.value is None
    assert "cut off at the token limit" in (result.error or "")


# --- a crashed runner -------------------------------------------------------------------------


async def test_a_crashed_runner_is_retried_once(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeHTTPError(500, RUNNER_TERMINATED), "back again"])
    reply = await ollama_hub.stream_text(Q)
    assert reply.text == "back again"
    assert len(fake_ollama.chat_requests()) == 2


async def test_a_runner_that_crashes_twice_is_the_typed_error(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    crash = FakeHTTPError(500, RUNNER_TERMINATED)
    fake_ollama.extend([crash, crash, "never asked for"])
    with pytest.raises(LLMError) as info:
        await ollama_hub.stream_text(Q)
    assert info.value.kind == ModelErrorKind.unknown
    assert info.value.status == 500
    assert "model runner stopped" in str(info.value)
    assert len(fake_ollama.chat_requests()) == 2, "one retry, not the busy-server two"


async def test_another_500_is_not_retried(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeHTTPError(500, "something else broke"), "unused"])
    with pytest.raises(LLMError):
        await ollama_hub.stream_text(Q)
    assert len(fake_ollama.chat_requests()) == 1


# --- the small-model profile --------------------------------------------------------------


def test_parameter_sizes_read_as_billions() -> None:
    assert parameter_billions("135M") == pytest.approx(0.135)
    assert parameter_billions("3.2B") == 3.2
    assert parameter_billions("7b") == 7.0
    assert parameter_billions("") is None
    assert parameter_billions("big") is None


def test_model_info_from_a_real_show_shape() -> None:
    show = {
        "details": {"family": "qwen2", "parameter_size": "494.03M"},
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
    }
    info = model_info_from_show(show)
    assert info == ModelInfo("494.03M", 32768)
    assert model_info_from_show({"details": {}}) == ModelInfo()
    assert model_info_from_show("nonsense") == ModelInfo()


@pytest.mark.parametrize(
    ("requested", "size", "expected"),
    [
        ("auto", "135M", "small"),
        ("auto", "2.9B", "small"),
        ("auto", "3.2B", "default"),
        ("auto", None, "default"),
        ("small", "70B", "small"),
        ("default", "135M", "default"),
    ],
)
def test_profile_choice(requested: str, size: str | None, expected: str) -> None:
    settings = ModelSettings(profile=requested)  # type: ignore[arg-type]
    assert choose_profile(settings, ModelInfo(size, 2048)).name == expected


def test_the_small_profile_tightens_the_engine_settings() -> None:
    settings = Settings()
    small = settings.effective(choose_profile(settings.model.model_copy(), ModelInfo("135M")))
    assert small.small_model
    assert small.loop.step_tool_budget == 2
    assert small.loop.max_parallel_steps == 1
    assert small.loop.parallelism == "dependency"
    assert small.loop.agentic_max_iterations == 1
    assert small.memory.cross_thread is False
    assert settings.loop.step_tool_budget == 8, "the configured settings are unchanged"
    default = settings.effective(choose_profile(settings.model, ModelInfo("7B")))
    assert not default.small_model
    assert default.loop == settings.loop and default.memory == settings.memory
    assert default.resolved_profile is not None and default.resolved_profile.small is False


async def test_auto_profile_reads_api_show() -> None:
    models = [
        FakeOllamaModel("tiny", parameter_size="135M", context_length=2048),
        FakeOllamaModel("qwen2.5:7b", parameter_size="7.6B", context_length=32768),
    ]
    with FakeOllamaServer(models=models) as server:
        tiny = await resolve_profile(ModelSettings(name="tiny", base_url=server.url))
        big = await resolve_profile(ModelSettings(name="qwen2.5:7b", base_url=server.url))
        missing = await resolve_profile(ModelSettings(name="nope", base_url=server.url))
        shows = [r for r in server.requests if r.path == "/api/show"]
    assert tiny.small
    assert (tiny.info.parameter_size, tiny.info.context_length) == ("135M", 2048)
    assert tiny.info.can("tools") is True
    assert tiny.describe() == "profile small (auto: 135M parameters)"
    assert not big.small and big.info.context_length == 32768
    assert not missing.small and missing.reason == "auto: size unknown"
    assert len(shows) == 3


async def test_session_start_resolves_and_applies_the_profile(tmp_path: Path) -> None:
    from soothe.engine.session import Session

    model = FakeOllamaModel("tiny", parameter_size="135M", context_length=4096)
    with FakeOllamaServer(models=[model]) as server:
        settings = Settings(
            model={"name": "tiny", "base_url": server.url},
            storage={"data_dir": tmp_path / "data"},
        )
        session = Session(settings, db_path=":memory:", checkpoint_path=":memory:")
        await session.start()
        try:
            assert session.profile.small
            assert session.effective_settings.small_model
            assert session.runner.settings.loop.step_tool_budget == 2
            assert session.runner.settings.loop.agentic_max_iterations == 1
            assert session.memory.cross_thread is False
            assert session.settings.loop.step_tool_budget == 8
        finally:
            await session.close()


# --- soothe doctor ------------------------------------------------------------------------------


def _doctor(server: FakeOllamaServer, name: str, num_ctx: int, tmp_path: Path) -> str:
    from soothe.engine.llm.doctor import run_doctor

    settings = Settings(
        model={"name": name, "base_url": server.url, "num_ctx": num_ctx},
        storage={"data_dir": tmp_path / "data"},
    )
    out = io.StringIO()
    run_doctor(settings, out)
    return out.getvalue()


def test_doctor_prints_size_and_context_and_warns(tmp_path: Path) -> None:
    models = [
        FakeOllamaModel("tiny", parameter_size="135M", context_length=2048),
        FakeOllamaModel("qwen2.5:7b", parameter_size="7.6B", context_length=32768),
    ]
    with FakeOllamaServer(models=models) as server:
        tiny = _doctor(server, "tiny", 8192, tmp_path)
        big = _doctor(server, "qwen2.5:7b", 8192, tmp_path)
    lines = tiny.splitlines()
    assert "  model size   135M parameters" in lines
    assert (
        "  window       2048 tokens (model.num_ctx, capped by the model's trained context; "
        "trained 2048)"
    ) in lines
    assert "  capabilities completion, tools" in lines
    assert "profile      small" in tiny
    assert "warning: tiny has 135M parameters" in tiny
    # One rule with window.py: the same line a run's hub.window carries.
    assert (
        "warning: model.num_ctx = 8192 exceeds the model's trained context of 2048 tokens: "
        "the window is 2048; set model.num_ctx <= 2048"
    ) in lines
    assert "model size   7.6B parameters" in big
    assert "  window       8192 tokens (model.num_ctx; trained 32768)" in big.splitlines()
    assert "profile      default" in big
    assert "warning" not in big
