"""A small MCP server for the tests, written with the official SDK.

Run ``python mcp_test_server.py`` for stdio, or ``python mcp_test_server.py
--http`` to serve streamable HTTP on 127.0.0.1 (it prints ``PORT <n>`` on
stdout once it listens). ``--stderr TEXT`` writes a line to stderr at start and
``--print-env NAME`` writes ``NAME=<value>`` there (the pool keeps the last
lines and must blank out secrets).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("test-server", log_level="WARNING")


class Sum(BaseModel):
    total: int


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Repeat the text back."""
    return f"echo: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> Sum:
    """Add two integers (structured result)."""
    return Sum(total=a + b)


@server.tool()
def fail(message: str) -> str:
    """Always fail with the message."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """Exit the server process at once (tests restart-on-crash)."""
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """Return the server's process id."""
    return str(os.getpid())


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer (tests call timeouts)."""
    await anyio.sleep(seconds)
    return "woke up"


@server.tool()
def write_file(path: str, text: str) -> str:
    """Write text to a file (a tool that changes something)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return f"wrote {len(text)} characters"


@server.prompt()
def huge(megabytes: str = "10") -> str:
    """A prompt whose text is many megabytes long."""
    return "x" * (int(megabytes) * 1024 * 1024)


@server.resource("file:///{path}", name="local file", mime_type="text/plain")
def local_file(path: str) -> str:
    """Answer with the path asked for; this server reads nothing."""
    return f"you asked for {path!r}"


async def _serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    uvicorn_server = uvicorn.Server(config)
    print(f"PORT {port}", flush=True)
    await uvicorn_server.serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--stderr", default="")
    parser.add_argument("--print-env", default="")
    options = parser.parse_args()
    if options.stderr:
        sys.stderr.write(options.stderr + "\n")
        sys.stderr.flush()
    if options.print_env:
        sys.stderr.write(f"{options.print_env}={os.environ.get(options.print_env)}\n")
        sys.stderr.flush()
    if options.http:
        anyio.run(_serve_http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
