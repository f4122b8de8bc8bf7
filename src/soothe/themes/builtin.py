"""The four built-in themes. Calm by default; one light, one high-contrast, one warm."""

from __future__ import annotations

from textual.theme import Theme

from soothe.engine.config_file import DEFAULT_THEME  # ui.theme's default, one place

__all__ = ["BUILTIN_THEMES", "DEFAULT_THEME"]

BUILTIN_THEMES: dict[str, Theme] = {
    theme.name: theme
    for theme in (
        Theme(
            name="soothe-dark",
            primary="#7AA2F7",
            secondary="#BB9AF7",
            accent="#7DCFFF",
            warning="#E0AF68",
            error="#F7768E",
            success="#9ECE6A",
            foreground="#C9CED8",
            background="#15171C",
            surface="#1A1D23",
            panel="#232730",
            dark=True,
            variables={
                "border": "#7AA2F7",
                "border-blurred": "#2C313C",
                "footer-key-foreground": "#7DCFFF",
                "block-cursor-background": "#2F3A52",
                "block-cursor-foreground": "#E6E9EF",
                "block-cursor-text-style": "bold",
                "input-selection-background": "#7AA2F7 35%",
            },
        ),
        Theme(
            name="soothe-light",
            primary="#2F5D9A",
            secondary="#7A4FB0",
            accent="#0E7C86",
            warning="#A35F00",
            error="#B42318",
            success="#2E7D32",
            foreground="#24292F",
            background="#F6F5F2",
            surface="#FFFFFF",
            panel="#E9E7E1",
            dark=False,
            variables={
                "border": "#2F5D9A",
                "border-blurred": "#D5D2CA",
                "footer-key-foreground": "#2F5D9A",
                "block-cursor-background": "#D6E2F3",
                "block-cursor-foreground": "#111111",
                "block-cursor-text-style": "bold",
            },
        ),
        Theme(
            name="soothe-high-contrast",
            primary="#FFFF00",
            secondary="#FF80FF",
            accent="#00FFFF",
            warning="#FFB000",
            error="#FF5050",
            success="#00FF00",
            foreground="#FFFFFF",
            background="#000000",
            surface="#000000",
            panel="#1C1C1C",
            dark=True,
            text_alpha=1.0,
            variables={
                "border": "#FFFF00",
                "border-blurred": "#FFFFFF",
                "text-muted": "#D0D0D0",
                "footer-key-foreground": "#FFFF00",
                "block-cursor-background": "#FFFF00",
                "block-cursor-foreground": "#000000",
                "block-cursor-text-style": "bold",
                "block-cursor-blurred-background": "#404040",
                "block-cursor-blurred-foreground": "#FFFFFF",
            },
        ),
        Theme(
            name="soothe-dusk",
            primary="#E8A87C",
            secondary="#C38D9E",
            accent="#85DCB0",
            warning="#E8C47C",
            error="#E27D7D",
            success="#A3D977",
            foreground="#E6DFE9",
            background="#1E1A22",
            surface="#241F29",
            panel="#2F2836",
            dark=True,
            variables={
                "border": "#E8A87C",
                "border-blurred": "#3A3242",
                "footer-key-foreground": "#E8A87C",
                "block-cursor-background": "#4A3B4F",
                "block-cursor-foreground": "#FFF4EA",
                "block-cursor-text-style": "bold",
            },
        ),
    )
}
