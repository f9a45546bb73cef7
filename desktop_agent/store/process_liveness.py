"""Is the process that was writing a streaming reply still running?

On start the store marks replies left "streaming" by a dead process as
"interrupted", but must not touch a reply another live process (the REST
server, a second window) is writing right now. Each streaming message records
its writer as ``"<host>:<pid>:<start time>"``; the start time guards against a
recycled pid where the platform tells it (Linux ``/proc``).
"""

from __future__ import annotations

import os
import socket
import sys
from functools import cache


def _proc_stat(pid: int) -> list[str]:
    """Fields 3 onwards of ``/proc/<pid>/stat`` (state, ppid, ...), or [] off Linux."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return []
    # The command name (field 2) may contain spaces; fields after the last ')' are fixed.
    return stat.rpartition(")")[2].split()


def _start_time(pid: int) -> str:
    fields = _proc_stat(pid)
    return fields[19] if len(fields) > 19 else ""


@cache
def current_writer() -> str:
    """This process's writer token."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"


def _pid_running(pid: int) -> bool:
    if sys.platform == "win32":
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        try:
            code = ctypes.c_ulong()
            kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)  # signal 0 only checks; never used on Windows, where it would kill
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def writer_alive(writer: str | None) -> bool:
    """True when the process named by a writer token is still running."""
    if not writer:
        return False
    if writer == current_writer():
        return True
    host, _, rest = writer.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname():
        # Another machine (a database on a shared folder): we cannot tell; assume alive.
        return True
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if not _pid_running(pid):
        return False
    fields = _proc_stat(pid)
    if fields and fields[0] in ("Z", "X"):  # killed, waiting to be reaped
        return False
    now_start = fields[19] if len(fields) > 19 else ""
    return not start or not now_start or now_start == start
