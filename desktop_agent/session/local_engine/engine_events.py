"""What the app's engine reports to the front ends: models loading, running, ending; downloads.

These are app-wide (the Models window, the banner, the server picker, ``serve``'s
engine event stream), unlike :mod:`desktop_agent.session.events`, which belong to one
conversation. Listeners are called on the event loop's thread, download progress too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from desktop_agent.engine.download_progress import DownloadProgress
from desktop_agent.engine.errors import DownloadError, EngineError

StopReason = Literal["asked", "idle", "switched", "quit"]


@dataclass(frozen=True)
class LocalServer:
    """A model running on this computer, as the server picker lists it ("On this computer").

    Attributes:
        name: The model as a person knows it (the library's display name).
        path: Its file.
        model: The name to send in requests.
        base_url: ``http://127.0.0.1:PORT/v1``.
        api_key: The engine's random key (never shown, logged or stored).
        context_length: Tokens per conversation as llama.cpp applied them.
        parallel: Conversations it serves at once.
        threads: CPU threads it runs with.
        supports_tools: Whether the template in use renders tools.
        chat_template_source: ``model``, ``tool template`` or ``custom``.
        pid: The engine process.
    """

    name: str
    path: Path
    model: str
    base_url: str
    api_key: str = field(repr=False)
    context_length: int | None
    parallel: int | None
    threads: int | None
    supports_tools: bool | None
    chat_template_source: str
    pid: int | None


@dataclass(frozen=True)
class ModelStarting:
    """A model is loading (Run, a turn on a model not running, a restart)."""

    name: str
    path: Path


@dataclass(frozen=True)
class ModelReady:
    """A model answers: connect with ``server``."""

    server: LocalServer


@dataclass(frozen=True)
class ModelStartFailed:
    """A model did not start; ``error``'s sentence says why (a typed engine error)."""

    name: str
    path: Path
    error: EngineError


@dataclass(frozen=True)
class ModelStopped:
    """A model was unloaded: asked to, unused for the set time, replaced, or the app quits."""

    name: str
    path: Path
    reason: StopReason


@dataclass(frozen=True)
class ModelCrashed:
    """The engine ended without being asked: name the signal, offer Restart.

    Attributes:
        name: The model.
        path: Its file.
        message: How it ended, with advice (``killed by SIGKILL — often the system
            running out of memory; …``).
        signal_name: ``SIGKILL`` and the like, or None for an exit status.
        returncode: The process's return code.
        log_tail: The engine's last log lines, for a details view.
    """

    name: str
    path: Path
    message: str
    signal_name: str | None
    returncode: int
    log_tail: str


@dataclass(frozen=True)
class DownloadProgressed:
    """Bytes arrived (at most ten reports a second per download)."""

    download_id: str
    progress: DownloadProgress


@dataclass(frozen=True)
class DownloadFinished:
    """A download is complete and verified; the model is in the library at ``path``."""

    download_id: str
    path: Path


@dataclass(frozen=True)
class DownloadFailed:
    """A download stopped: cancelled, network, disk, checksum, gated; ``error`` says which.

    A cancelled or interrupted download keeps its partial file: starting the same
    download again resumes it.
    """

    download_id: str
    error: DownloadError


EngineEvent = (ModelStarting | ModelReady | ModelStartFailed | ModelStopped | ModelCrashed
               | DownloadProgressed | DownloadFinished | DownloadFailed)
