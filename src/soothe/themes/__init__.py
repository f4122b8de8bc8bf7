"""Built-in themes, user themes from TOML, and the app stylesheet (soothe.tcss)."""

from __future__ import annotations

from pathlib import Path

from soothe.themes.builtin import BUILTIN_THEMES, DEFAULT_THEME
from soothe.themes.user import ThemeFileError, load_theme_file, load_user_themes, user_theme_dir

STYLESHEET = Path(__file__).with_name("soothe.tcss")

__all__ = [
    "BUILTIN_THEMES",
    "DEFAULT_THEME",
    "STYLESHEET",
    "ThemeFileError",
    "load_theme_file",
    "load_user_themes",
    "user_theme_dir",
]
