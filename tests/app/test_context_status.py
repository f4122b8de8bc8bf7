"""The status line's ``ctx``: the latest call's prompt against the window, through the
real Session (fake Ollama); a prompt the server cut (``model.context``) adds a mark until
the next call reports its count."""

from __future__ import annotations

import json
from typing import Any

from soothe.widgets.status_line import CUT_MARK, StatusInfo, render_status
from tests.app.conftest import type_text
from tests.app.real_harness import Rig, classify, ready, settle
from tests.fakes import FakeReply
from tests.fakes.ollama_server import FakeOllamaModel


def test_ctx_is_drawn_against_the_window() -> None:
    info = StatusInfo(model="m", provider="reachable", ctx_used=3100, ctx_window=8192)
    assert render_status(info).plain == "idle │ m ● reachable │ ctx 3.1k/8k"
    cut = StatusInfo(model="m", provider="reachable", ctx_used=1024, ctx_window=2048, ctx_cut=True)
    assert render_status(cut, 80).plain == f"m ● reachable │ ctx 1.0k/2k {CUT_MARK}"
    # no window known (a reopened thread, a call before any count): no ctx
    assert "ctx" not in render_status(StatusInfo(model="m", ctx_used=5)).plain


async def test_status_shows_the_latest_calls_context_use(rig: Rig) -> None:
    reply = json.dumps(classify("quiz", "4."))
    rig.brain.add("Classification", FakeReply(text=reply, usage=(1900, 12)))
    app = rig.app()
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "What is 2+2?")
        await pilot.press("enter")
        await settle(app, pilot)
        info = app.main.status.info
        assert (info.ctx_used, info.ctx_window, info.ctx_cut) == (1900, 8192, False)
        assert "ctx 1.9k/8k" in render_status(info).plain


async def test_a_cut_prompt_marks_ctx_until_the_next_call(rig: Rig) -> None:
    """The server loads 1024 tokens of the 2048 we ask for: the first classification is
    cut (model.context, re-packed), the mark shows, the retry's count clears it."""
    rig.server.add_model(FakeOllamaModel("llama3.2", max_num_ctx=1024))
    rig.configure(model={"num_ctx": 2048})
    rig.brain.always["Classification"] = {"label": "quiz", "answer": "Paris."}
    app = rig.app()
    seen: list[tuple[int, int, bool]] = []
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(app, pilot)
        status = app.main.status
        original = status.set

        def recording(**changes: Any) -> None:
            original(**changes)
            seen.append((status.info.ctx_used, status.info.ctx_window, status.info.ctx_cut))

        status.set = recording  # type: ignore[method-assign]
        request = "What is the capital of France? " + " ".join(
            f"Note {i}: the travel notes say Paris has many museums." for i in range(90)
        )
        app.prompt.value = request
        await pilot.press("enter")
        await settle(app, pilot)
        cut = [r for r in rig.server.chat_log if r.truncated]
        assert len(cut) == 1
        marked = [s for s in seen if s[2]]
        assert marked and marked[0][:2] == (cut[0].kept_tokens, 2048)
        assert f"{CUT_MARK}" not in render_status(status.info).plain
        assert status.info.ctx_cut is False and status.info.ctx_window == 1024


def test_a_call_without_a_count_leaves_the_last_ctx() -> None:
    """A call that failed before the server counted (no server: 0 input tokens) drew
    'ctx 0/8k'; the last call that was counted stays, cut mark included."""
    from soothe.app.view_state import ViewState
    from soothe.engine import events as ev
    from tests.app.test_view_state import RecordingPort

    port = RecordingPort()
    state = ViewState(port)
    state.feed(ev.Usage(input_tokens=1500, output_tokens=20, window=2048, thread_id="t1"))
    state.feed(
        ev.ModelContext(
            window=2048, sent_tokens=2600, evaluated_tokens=1024, action="repacked", thread_id="t1"
        )
    )
    state.feed(ev.Usage(input_tokens=0, output_tokens=0, window=2048, thread_id="t1"))
    state.feed(ev.Usage(input_tokens=900, output_tokens=5, window=0, thread_id="t1"))
    ctx = [
        {k: v for k, v in call if k.startswith("ctx_")}
        for call in port.named("status")
        if any(k.startswith("ctx_") for k, _ in call)
    ]
    assert ctx == [
        {"ctx_used": 1500, "ctx_window": 2048, "ctx_cut": False},
        {"ctx_used": 1024, "ctx_window": 2048, "ctx_cut": True},
    ]


def test_a_running_goal_s_budget_fits_the_line_at_120_and_80_columns() -> None:
    """The budget segment made the line longer than the terminal: at 120x40 it ended at
    'budget G1 tokens', at 80x24 at 'G1'. Labels, then the thread, then the run's tokens
    give way; the spend against the budget stays whole."""
    info = StatusInfo(
        model="llama3.2",
        provider="reachable",
        running=True,
        thread="t-0001",
        iteration=1,
        max_iterations=8,
        ctx_used=1200,
        ctx_window=8192,
        tokens_in=3200,
        tokens_out=69,
        budget="G1 tokens 3.1k/10k",
        elapsed=2,
    )
    for width in (200, 120, 80):
        line = render_status(info, width).plain
        assert len(line) <= width - 2, (width, line)
        assert line.endswith("G1 tokens 3.1k/10k │ 0:02"), (width, line)
    assert "thread t-0001" in render_status(info, 200).plain
    assert "t-0001" in render_status(info, 120).plain
