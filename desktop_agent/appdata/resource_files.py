"""Locate files from the top-level ``resources/`` folder, however the app runs.

* wheel install: hatch force-includes ``resources/`` as ``desktop_agent/resources``;
* editable install / source checkout: ``<repo>/resources``;
* PyInstaller binary: unpacked under ``sys._MEIPASS`` (``resources/``).
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path


@cache
def resources_dir() -> Path:
    """The folder holding icons, the stylesheet and the tokenizer file."""
    package = Path(__file__).resolve().parent.parent  # desktop_agent/
    candidates = []
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        candidates += [Path(frozen_root) / "resources", Path(frozen_root) / "desktop_agent" /
                       "resources"]
    candidates += [package / "resources", package.parent / "resources"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[-1]


def resource_path(name: str) -> Path:
    """Path of a file in ``resources/`` (it may not exist; callers check)."""
    return resources_dir() / name
