"""Fixtures for the tools tests: real MCP servers as subprocesses."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.tooling.config import McpServerConfig

TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")


def _stdio_server(name: str = "test", *extra: str, **options: Any) -> McpServerConfig:
    return McpServerConfig(name, command=sys.executable, args=(str(TEST_SERVER), *extra),
                           **options)


@pytest.fixture
def stdio_server() -> Callable[..., McpServerConfig]:
    """Makes config entries for our own stdio test server: ``stdio_server(name, *args)``."""
    return _stdio_server


@pytest.fixture
def http_server_url() -> Iterator[str]:
    """Our test server over streamable HTTP on 127.0.0.1, in a subprocess."""
    process = subprocess.Popen([sys.executable, str(TEST_SERVER), "--http"],
                               stdout=subprocess.PIPE, text=True)
    first_line: list[str] = []
    reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()))
    reader.start()
    reader.join(30)
    try:
        assert first_line and first_line[0].startswith("PORT "), "HTTP test server did not start"
        yield f"http://127.0.0.1:{int(first_line[0].split()[1])}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        process.stdout.close()
