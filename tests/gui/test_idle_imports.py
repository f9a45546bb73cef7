"""What an idle window loads and holds: no httpx command-line client (≈6 MB), a small icon."""

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


def test_the_window_icon_has_the_small_sizes_only(qapp: object) -> None:
    """Each size of a window icon is held decoded: 256 and 512 px cost an idle window 2.2 MB."""
    from desktop_agent.gui.app import app_icon

    sizes = sorted(size.width() for size in app_icon().availableSizes())
    assert sizes[0] == 16
    assert max(sizes) == 128
