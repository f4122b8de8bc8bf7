"""A strip makes its caches when it uses one (issue 32 item 12), on the real Session.

Textual gives every ``Strip`` seven caches when it is made (~1.1 KB before any text); in
the real process 4,000-7,000 strips and 30,000-51,000 caches were alive between two idle
releases, and the process reached 162-190 MB after 100 demo requests
(``bench/bench_memory_process.py``). ``widgets/strip_caches`` makes them on first use."""

from __future__ import annotations

import gc

from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.strip import Strip

from soothe.widgets import strip_caches, textual_fixes
from tests.app.real_harness import Rig, ready, screen_text, send, settle


def live(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is kind)


def test_a_strip_makes_a_cache_when_it_uses_one_and_cuts_the_same() -> None:
    textual_fixes.apply()
    assert "strip caches" in textual_fixes.applied()
    red = Style(color="red")
    strip = Strip([Segment("hello "), Segment("world", red)], 11)
    assert list(strip_caches.caches(strip)) == []  # none until used
    assert strip.crop(2, 8).text == "llo wo"
    assert strip.crop(2, 8) is strip.crop(2, 8)  # cached, as Textual's is
    assert [len(c) for c in strip_caches.caches(strip)] == [1]  # the crop cache only
    assert [s.text for s in strip.divide([3, 8, 11])] == ["hel", "lo wo", "rld"]
    assert strip.apply_style(red).text == "hello world"
    assert strip.crop_extend(0, 14, None).cell_length == 14
    assert strip.adjust_cell_length(4).text == "hell"
    assert strip.extend_cell_length(13).cell_length == 13
    assert len(list(strip_caches.caches(strip))) == 5


async def test_the_real_app_holds_few_strip_caches_per_strip(rig: Rig) -> None:
    """After demo requests with each screen drawn (no idle release in between), the
    strips the app holds carry about one cache each, not seven."""
    rig.configure(model={"provider": "demo"})
    requests = ["Summarise README.md in one line", "What is 2+2?", "List the files here"]
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        for text in requests:
            await send(app, pilot, text)
            await settle(app, pilot)
            screen_text(app)  # the terminal draws the screen
        strips, caches = live(Strip), live(FIFOCache)
        assert strips > 300, strips  # what a drawn screen holds
        # Textual's own: 7 per strip (every one made with seven); here ~0.5
        assert caches < 2 * strips, f"{caches} caches for {strips} strips"
