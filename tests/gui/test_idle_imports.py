"""What an idle window loads: httpx's command-line client stays out (≈6 MB per window)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_httpx_works_without_loading_its_command_line_client() -> None:
    code = textwrap.dedent("""
        import sys
        from desktop_agent.gui.app import skip_httpx_command_line
        skip_httpx_command_line()
        import httpx
        client = httpx.Client()  # the library itself is whole
        client.close()
        print(sorted(m for m in ("click", "rich", "httpx._main") if sys.modules.get(m)))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
