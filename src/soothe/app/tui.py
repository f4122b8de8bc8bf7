"""Start the full-screen app."""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soothe.engine.config import Settings
    from soothe.engine.config_file import FrameConfig


def run_tui(settings: Settings | FrameConfig, thread_id: str | None = None) -> int:
    """``settings``: the full Settings, or the FrameConfig the first frame needs (the app
    builds the Settings after it; a bad value exits 2 with the config's one line)."""
    gc.disable()  # until the engine is up: app/boot.py resume_gc() says why
    from soothe.app.main import SootheApp

    app = SootheApp(settings, thread_id=thread_id)
    app.run()
    if app.config_error:
        print(app.config_error, file=sys.stderr)
    return app.return_code or 0
