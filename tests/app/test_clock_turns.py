"""The spinner (and the run's elapsed seconds) turn in the event pump's frames while
events pour in, and by the timer only when they do not: a turn in a frame of its own was
one more frame, eight a second, that the tokens and the keys waited behind."""

from __future__ import annotations

from tests.app.real_harness import Rig, ready


async def test_the_pump_turns_the_clock_while_events_flow_and_the_timer_when_they_stop(
    rig: Rig,
) -> None:
    now = [100.0]
    app = rig.app(clock=lambda: now[0], animate=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        tree = app.main.goal_tree
        # no awaits below: the app's own 8 Hz timer cannot turn it in between
        app.handler.apply([])  # a batch: a turn is due (none yet)
        turns = tree.spinner_tick
        assert turns is not None
        app._tick()  # the timer, just after a batch: the pump's frames carry the clock
        assert tree.spinner_tick == turns
        now[0] += 0.1
        app.handler.apply([])  # a batch before the next turn is due
        assert tree.spinner_tick == turns
        now[0] += 0.1
        app.handler.apply([])  # due: turned in this batch's frame
        assert tree.spinner_tick == turns + 1
        app._tick()
        assert tree.spinner_tick == turns + 1
        now[0] += 0.3  # no batch for 0.3 s: the timer turns it
        app._tick()
        assert tree.spinner_tick == turns + 2
