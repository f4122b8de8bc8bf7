"""User themes: one TOML file per theme in $XDG_CONFIG_HOME/soothe/themes/.

A file holds the Textual Theme fields at top level and optional CSS variables:

    name = "paper"            # default: the file name without .toml
    primary = "#335577"
    background = "#FAFAF7"
    dark = false
    [variables]
    border = "#335577"
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from soothe.engine.config_file import xdg_config_home

COLOR_FIELDS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
OTHER_FIELDS = {"name": str, "dark": bool, "luminosity_spread": float, "text_alpha": float}


class ThemeFileError(ValueError):
    """One line naming the file and the problem."""


def user_theme_dir() -> Path:
    return xdg_config_home() / "soothe" / "themes"


def _check_color(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f"{path}: {key}: expected a colour string")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeFileError(f"{path}: {key}: not a colour: {value!r}") from None
    return value


def load_theme_file(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise ThemeFileError(f"{path}: cannot read ({exc.strerror})") from None
    fields: dict[str, Any] = {"name": path.stem}
    for key, value in data.items():
        if key in COLOR_FIELDS:
            fields[key] = _check_color(path, key, value)
        elif key in OTHER_FIELDS:
            kind = OTHER_FIELDS[key]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind):
                raise ThemeFileError(f"{path}: {key}: expected {kind.__name__}")
            fields[key] = value
        elif key == "variables":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise ThemeFileError(f"{path}: variables: expected a table of strings")
            fields["variables"] = dict(value)
        else:
            raise ThemeFileError(f"{path}: unknown key {key!r}")
    if "primary" not in fields:
        raise ThemeFileError(f"{path}: primary: required")
    return Theme(**fields)


def load_user_themes(directory: Path | None = None) -> tuple[list[Theme], list[str]]:
    """Themes from every ``*.toml`` in the directory, and one-line problems for bad files."""
    directory = directory or user_theme_dir()
    themes: list[Theme] = []
    problems: list[str] = []
    if not directory.is_dir():
        return themes, problems
    for path in sorted(directory.glob("*.toml")):
        try:
            themes.append(load_theme_file(path))
        except ThemeFileError as exc:
            problems.append(f"theme: {exc}")
    return themes, problems
