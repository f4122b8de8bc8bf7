"""Model and theme actions: ``/model``, ``/theme`` and their palette entries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from soothe.app.session_api import SessionAPI
from soothe.themes import BUILTIN_THEMES

if TYPE_CHECKING:
    from soothe.app.base import SootheBase

    _Base = SootheBase
else:
    _Base = object


def _listed(name: str, models: list[str]) -> bool:
    return name in models or f"{name}:latest" in models


class ModelActions(_Base):
    def switch_model(self, name: str) -> None:
        """``/model NAME`` (back to the real provider after /demo); ``/model`` lists them."""
        if not name:
            self.call_session(lambda s: s.list_models(), what="list the models", done=self._list)
            return

        async def switch(session: SessionAPI) -> list[str]:
            await session.set_model(name)
            try:
                return await session.list_models()
            except Exception:  # the server is down: the status line says so
                return []

        def switched(models: list[str]) -> None:
            self.models = models
            self.show_session_status()
            if models and not _listed(name, models):
                self.notify(
                    f"{name} is not on the server; it has {', '.join(models[:8])}."
                    + (f" Pull it with `ollama pull {name}`." if self._is_ollama() else ""),
                    title=f"Model: {name}",
                    severity="warning",
                    timeout=10,
                )
            else:
                self.notify(f"Model: {name}")

        self.call_session(switch, what=f"switch to {name}", done=switched)

    def _list(self, models: list[str]) -> None:
        self.models = models
        current = self.session.model_label if self.session is not None else ""
        if not models:
            self.notify("The model server lists no models.", severity="warning")
            return
        shown = ", ".join(f"{m} (current)" if m == current else m for m in models[:20])
        self.notify(f"{shown}\n/model NAME switches.", title="Models", timeout=10)

    def _is_ollama(self) -> bool:
        return self.settings.model.provider == "ollama"

    def switch_theme(self, name: str) -> None:
        if name not in self.available_themes:
            others = len(self.theme_names()) - len(BUILTIN_THEMES)
            known = ", ".join(BUILTIN_THEMES) + (
                f" or {others} more (tab completes)" if others else ""
            )
            self.notify(f"unknown theme {name!r}; try {known}", severity="warning")
            return
        self.theme = name
        if name != self.settings.ui.theme:
            self.notify(f'Theme {name} — set ui.theme = "{name}" in config.toml to keep it.')
