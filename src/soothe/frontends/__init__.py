"""The non-Textual front ends: ``soothe -p`` (headless) and the ``soothe threads`` CLI.

Each reaches the engine through the same ``soothe.engine.session.Session`` facade as the
TUI, and nothing here imports Textual or ``soothe.app``. ``soothe.cli`` imports these
modules only when their command runs.
"""
