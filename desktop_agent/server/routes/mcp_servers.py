"""The app's MCP servers, as the window's Server → MCP servers… panel shows them.

Their state (and why one failed), what each offers, their log messages and the
level asked of them (``logging/setLevel``). The servers are the app's, shared by
every conversation, so these routes are not under a conversation. A server's
log is for the person running the app: it never reaches a model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from desktop_agent.core import errors
from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.session import McpServerBoard, NoMcpServers, UnknownServer

router = APIRouter(tags=["mcp"])

ANSWERS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No MCP server is configured, or none by that "
                                              "name."},
    422: {"model": ErrorBody, "description": "The server is down or refused."},
}
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert",
                   "emergency"]


class McpServerOut(BaseModel):
    """One configured server."""

    name: str
    state: str = Field(description="connected, connecting, reconnecting, failed, stopped, "
                                   "disabled or 'not started'.")
    reason: str | None = Field(description="Why it failed or stopped.")
    transport: str
    tools: int
    resources: int
    templates: int
    prompts: int
    tool_list: str | None = Field(description="The last change of its tool list, in words.")
    log_level: str | None = Field(description="The level asked of it (None: its default).")
    log_lines: int


class McpServerList(BaseModel):
    servers: list[McpServerOut]


class LogEntryOut(BaseModel):
    time: float = Field(description="When it arrived (seconds since the epoch).")
    level: LogLevel
    logger: str | None
    text: str


class LogOut(BaseModel):
    server: str
    entries: list[LogEntryOut]


class LevelIn(BaseModel):
    level: LogLevel


class LevelOut(BaseModel):
    server: str
    level: LogLevel
    logs: bool = Field(description="False when the server declares no logging.")


def _board(svc: AppServices) -> McpServerBoard:
    return McpServerBoard(svc.session.tools)


@contextlib.contextmanager
def _answers() -> Iterator[None]:
    try:
        yield
    except NoMcpServers as exc:
        raise ApiError(404, "no_mcp_servers", str(exc)) from exc
    except UnknownServer as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    except errors.AgentError as exc:
        raise ApiError(422, "mcp_refused", errors.redact(str(exc))) from exc


@router.get("/mcp/servers", response_model=McpServerList, responses=ANSWERS)
async def list_servers(connect: bool = Query(True, description="Start the enabled servers "
                                             "not running yet, so their counts are known."),
                       svc: AppServices = Depends(services)) -> McpServerList:  # noqa: B008
    """Every configured MCP server: its state, transport and what it offers."""
    with _answers():
        views = await _board(svc).overview(connect=connect)
    return McpServerList(servers=[McpServerOut(**v.to_dict()) for v in views])


@router.get("/mcp/servers/{name}/log", response_model=LogOut, responses=ANSWERS)
async def server_log(name: str, level: LogLevel | None = None,
                     svc: AppServices = Depends(services)) -> LogOut:  # noqa: B008
    """A server's kept log messages, oldest first (``level``: that level and above)."""
    with _answers():
        entries = await _board(svc).log(name, level)
    return LogOut(server=name, entries=[LogEntryOut(**e.to_dict()) for e in entries])


@router.put("/mcp/servers/{name}/log-level", response_model=LevelOut, responses=ANSWERS)
async def set_level(name: str, body: LevelIn,
                    svc: AppServices = Depends(services)) -> LevelOut:  # noqa: B008
    """Ask a server for its log messages at this level and above (``logging/setLevel``)."""
    with _answers():
        logs = await _board(svc).set_log_level(name, body.level)
    return LevelOut(server=name, level=body.level, logs=logs)


@router.post("/mcp/servers/{name}/restart", response_model=McpServerOut, responses=ANSWERS)
async def restart(name: str, svc: AppServices = Depends(services)) -> McpServerOut:  # noqa: B008
    """Stop a server and start it again; its state says whether it came up."""
    board = _board(svc)
    with _answers(), contextlib.suppress(errors.AgentError):
        await board.restart(name)  # a failure is the state's reason below
    with _answers():
        views = await board.overview(connect=False)
    return McpServerOut(**next(v for v in views if v.name == name).to_dict())
