"""The SDK without its optional extras: MCP and the tokenizer are extras, and say so.

Each check runs in a fresh interpreter where the extra's package cannot be
imported (``sys.modules[name] = None``), as in an environment that installed
``desktop-agent`` alone (tests/e2e/test_sdk_install.py installs one for real).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    script = f"import sys\nsys.modules[{module!r}] = None\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)


def test_mcp_without_its_extra_names_the_install() -> None:
    result = _run_without("mcp", """
        from desktop_agent.core.tooling import mcp
        try:
            mcp.McpServerPool
        except ModuleNotFoundError as exc:
            print(exc)
    """)
    assert result.returncode == 0, result.stderr
    assert "pip install 'desktop-agent[mcp]'" in result.stdout


def test_token_counts_without_tiktoken_are_estimated_from_characters() -> None:
    result = _run_without("tiktoken", """
        import logging
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
        from desktop_agent.core.context.tokens import count_text_tokens
        print(count_text_tokens("abcd" * 10))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "10"
    assert "INFO tiktoken is not installed (pip install 'desktop-agent[tokenizer]'" \
        in result.stderr
    assert "WARNING" not in result.stderr
