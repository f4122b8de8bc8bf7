"""Start the full-screen app."""

from __future__ import annotations

from soothe.engine.config import Settings


def run_tui(settings: Settings, thread_id: str | None = None) -> int:
    from soothe.app.main import SootheApp

    app = SootheApp(settings, thread_id=thread_id)
    app.run()
    return app.return_code or 0
