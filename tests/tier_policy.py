"""What a test does when a real part it needs is missing: skip locally, fail in CI.

On a developer's machine a missing llama.cpp wheel, keyring daemon or built binary is
normal, and a skip that names the install command is the helpful answer. In CI the
install step is supposed to have provided every part, so a missing one means that step
broke; a skip there would let a whole tier pass without running. ``CI`` is set by
``.ci/run`` (and by most CI services).
"""

from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest


def running_in_ci() -> bool:
    """True under CI, where a tier that cannot run must fail rather than skip."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def part_missing(reason: str) -> NoReturn:
    """Skip with ``reason`` locally; fail with it in CI.

    Called in a test or fixture it skips or fails that test; called at a module's top
    (before the imports that need the part) it skips the module locally, and in CI
    fails its collection, which fails the run.
    """
    if running_in_ci():
        pytest.fail(f"CI must run this tier, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(module: str, install: str = "pip install -e '.[test]'") -> None:
    """Carry on if ``module`` can be imported; otherwise skip locally, fail in CI.

    The rule's counterpart to ``pytest.importorskip``, which would skip in CI too
    (at a module's top it skips the whole module while collecting, before any
    fixture that would have failed in CI runs).
    """
    if importlib.util.find_spec(module) is None:
        part_missing(f"{module} is not installed ({install})")
