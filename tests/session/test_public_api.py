"""The session package's ``__all__`` is the front ends' one door, and opening it is cheap."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import desktop_agent.session as session

REPO = Path(__file__).resolve().parents[2]


def test_every_public_name_is_the_object_its_module_defines() -> None:
    assert session.__all__ == sorted(session.__all__)
    for name in session.__all__:
        module = importlib.import_module(f"desktop_agent.session.{session._EXPORTS[name]}")
        assert getattr(session, name) is getattr(module, name), name
    assert set(dir(session)) == set(session.__all__)


def test_a_name_outside_the_api_is_refused_with_its_name() -> None:
    with pytest.raises(AttributeError, match="'no_such_name'"):
        _ = session.no_such_name


def test_importing_the_package_loads_no_submodule_and_no_heavy_library() -> None:
    """The window imports the package before it paints; only names it uses may load."""
    code = ("import sys, desktop_agent.session\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith("
            "('desktop_agent.session.', 'desktop_agent.core', 'desktop_agent.store', "
            "'pydantic', 'openai')))))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=120, check=True)
    assert result.stdout.strip() == ""


def test_front_ends_import_the_session_layer_only_through_its_package() -> None:
    """The import-linter contract ``session-door``; it names the offending line when broken."""
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint_imports), "--no-cache", "--contract", "session-door"],
                            cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout
