"""Start the full-screen app."""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from soothe.app.main import SootheApp
    from soothe.engine.config import Settings
    from soothe.engine.config_file import FrameConfig


def run_tui(
    settings: Settings | FrameConfig, thread_id: str | None = None, request: str | None = None
) -> int:
    """``settings``: the full Settings, or the FrameConfig the first frame needs (the app
    builds the Settings after it; a bad value exits 2 with the config's one line).
    ``request`` (``soothe "REQUEST"``) is sent once the first frame is up, as if typed
    into the prompt and sent with enter (its run waits for the engine)."""
    from soothe.app import memdump

    memdump.install()  # SOOTHE_TRACEMALLOC=DIR: snapshots on SIGUSR1 (a bench's probe)
    gc.disable()  # until the engine is up: app/boot.py resume_gc() says why
    from soothe.app.main import SootheApp

    app = SootheApp(
        settings, thread_id=thread_id, on_first_frame=send_first(request) if request else None
    )
    app.run()
    if app.config_error:
        print(app.config_error, file=sys.stderr)
    return app.return_code or 0


def send_first(request: str) -> Callable[[SootheApp], None]:
    """What the first frame does for ``soothe "REQUEST"``: the prompt's own enter."""

    def send(app: SootheApp) -> None:
        from soothe.widgets.prompt_input import PromptInput

        app.prompt.post_message(PromptInput.Submitted(app.prompt, request))

    return send
