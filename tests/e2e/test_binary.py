"""The frozen binary (``dist/desktop-agent`` from ``build.spec``) does what the installed
command does: the same checks as ``test_entry_point.py``, run on the binary.

Build it first with ``bash .ci/build_binary.sh`` (CI does, before the tests) or
``pyinstaller --noconfirm build.spec``; without it these tests skip and say why (in CI they fail).
"""

from __future__ import annotations

import sys

import pytest
from test_entry_point import REPO, EntryPointChecks
from tier_policy import part_missing

pytestmark = pytest.mark.e2e

BINARY = REPO / "dist" / ("desktop-agent.exe" if sys.platform == "win32" else "desktop-agent")


class TestFrozenBinary(EntryPointChecks):
    @pytest.fixture(autouse=True)
    def _command(self):
        if not BINARY.is_file():
            part_missing(
                f"{BINARY.relative_to(REPO)} is not built "
                "(run: bash .ci/build_binary.sh, or pyinstaller --noconfirm build.spec)"
            )
        self.command = [str(BINARY)]

