"""House rules about imports: layers point one way (a matrix read by an AST check, every
import statement wherever it sits, lazy ones included); start-up stays light."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import soothe

SRC = Path(soothe.__file__).resolve().parent
ENGINE = SRC / "engine"
UI = ("textual", "soothe.app", "soothe.widgets")
FORBIDDEN_IN_ENGINE = (*UI, "soothe.frontends")
LAYERS: dict[str, tuple[str, ...]] = {
    # package: what it must never import
    "engine": FORBIDDEN_IN_ENGINE,
    "widgets": ("soothe.app", "soothe.frontends"),
    "frontends": UI,
    "themes": ("soothe.app", "soothe.widgets", "soothe.frontends"),
}
"""The layer matrix. soothe.app may import any of them; soothe.cli dispatches to app and
frontends lazily."""
LIGHT_MODULES = (
    "soothe.cli",
    "soothe.engine.config",
    "soothe.engine.events",
    "soothe.engine.bus",
    "soothe.engine.interact",
)
HEAVY = (
    "langchain_core",
    "langgraph",
    "langchain_ollama",
    "langchain_openai",
    "textual",
    "ollama",
    "openai",
    "httpx",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _matches(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def forbidden_imports(
    source: str,
    module: str,
    is_package: bool = False,
    forbidden: tuple[str, ...] = FORBIDDEN_IN_ENGINE,
) -> list[tuple[int, str]]:
    """(line, module) for each import statement of a forbidden module, wherever it sits."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        bad = [n for n in names if _matches(n, forbidden)]
        if bad:
            found.append((node.lineno, bad[0]))
    return sorted(found)


def test_checker_catches_every_form() -> None:
    source = "\n".join(
        [
            "import textual",
            "import textual.app as ta",
            "from textual.widgets import Static",
            "from soothe.app import main",
            "from soothe import widgets",
            "from ...app import tui",
            "def later():",
            "    import soothe.widgets.goal_tree",
            "import textualize_other",
            "from soothe.engine import bus",
            "from . import events",
        ]
    )
    hits = forbidden_imports(source, "soothe.engine.loop.graph")
    assert [line for line, _ in hits] == [1, 2, 3, 4, 5, 6, 8]
    assert (6, "soothe.app") in hits


def layer_problems(layer: str) -> list[str]:
    package = SRC / layer
    modules = sorted(package.rglob("*.py"))
    assert modules, f"no modules under {package}"
    problems = []
    for path in modules:
        source = path.read_text(encoding="utf-8")
        name = module_name(path)
        for line, bad in forbidden_imports(source, name, path.name == "__init__.py", LAYERS[layer]):
            problems.append(f"{path.relative_to(SRC.parent)}:{line}: imports {bad}")
    return problems


def test_engine_never_imports_the_ui() -> None:
    assert len(sorted(ENGINE.rglob("*.py"))) >= 5
    problems = layer_problems("engine")
    assert not problems, "soothe.engine must not import the UI:\n" + "\n".join(problems)


@pytest.mark.parametrize("layer", ["widgets", "frontends", "themes"])
def test_layers_point_one_way(layer: str) -> None:
    problems = layer_problems(layer)
    assert not problems, f"soothe.{layer} imports a layer above it:\n" + "\n".join(problems)


def test_the_matrix_checks_other_layers_too() -> None:
    hits = forbidden_imports(
        "from soothe.app.keymap import bindings\nfrom soothe.engine import views\n",
        "soothe.widgets.goal_tree",
        forbidden=LAYERS["widgets"],
    )
    assert hits == [(1, "soothe.app.keymap")]
    hits = forbidden_imports(
        "import textual\nfrom ..app import main\n",
        "soothe.frontends.headless",
        forbidden=LAYERS["frontends"],
    )
    assert hits == [(1, "textual"), (2, "soothe.app")]


def test_light_modules_import_nothing_heavy() -> None:
    code = (
        "import json, sys\n"
        f"import {', '.join(LIGHT_MODULES)}\n"
        f"heavy = {list(HEAVY)!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], "heavy modules imported at start-up"


def _soothe_command() -> list[str]:
    script = Path(sys.executable).parent / "soothe"
    if script.exists():
        return [str(script)]
    found = shutil.which("soothe")
    return [found] if found else [sys.executable, "-m", "soothe"]


@pytest.mark.parametrize(
    ("flag", "expected"),
    [("--help", "usage: soothe"), ("--version", f"soothe {soothe.__version__}")],
)
def test_entry_point_help_and_version(flag: str, expected: str) -> None:
    done = subprocess.run(
        [*_soothe_command(), flag], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(expected)
    assert done.stderr == ""
