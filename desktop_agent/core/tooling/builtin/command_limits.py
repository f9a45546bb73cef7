"""What one sandboxed command may use: memory, processes, file size, private ``/tmp``.

Without limits a command held the machine until its timeout: a fork bomb, a
memory hog or a disk filler made the app and every other conversation wait.
Inside the sandbox the limits are set as hard resource limits by the first
process (``ulimit -H``: a command without capabilities can lower them, never
raise them), the private ``/tmp`` is a tmpfs of a fixed size, and:

* **Memory**: ``RLIMIT_AS`` per process (virtual memory; a program that asks
  for more gets an allocation failure, Python a ``MemoryError``).
* **Processes**: ``RLIMIT_NPROC``. bubblewrap gives the command a user
  namespace of its own, where the kernel counts only the sandbox's processes.
  Root is exempt from that limit, so as root the command also goes into a
  ``pids`` cgroup of its own with ``pids.max`` (see :class:`PidsGroup`) when
  the cgroup file system lets the app make one. Where neither holds (root
  without a delegated ``pids`` cgroup, some kernels for a normal user:
  :func:`~desktop_agent.core.tooling.builtin.sandbox.processes_capped` tries
  it), a fork bomb runs until its time limit, and the result says so
  (:meth:`CommandLimits.uncapped_timeout`).
* **File size**: ``RLIMIT_FSIZE``; a write past it gets ``SIGXFSZ``.

:meth:`CommandLimits.explain` turns what a command left behind (exit status,
stderr, the cgroup's counters) into one sentence for the card, so the person
learns *which* limit ended it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("desktop_agent.tools.sandbox")

#: Defaults, stated in the README; per conversation: ``command_memory_mb`` and friends.
DEFAULT_MEMORY_MB = 4096
DEFAULT_PROCESSES = 256
DEFAULT_FILE_MB = 1024
DEFAULT_TMP_MB = 512

_MIB = 1 << 20
_FORK_FAILED = ("fork: retry", "fork: Resource temporarily unavailable",
                "Cannot fork", "can't fork", "BlockingIOError: [Errno 11]")
_NO_MEMORY = ("MemoryError", "Cannot allocate memory", "memory exhausted", "out of memory",
              "std::bad_alloc", "failed to allocate")
_NO_SPACE = ("No space left on device",)


@dataclass(frozen=True, slots=True)
class CommandLimits:
    """The resources one command (with everything it starts) may use.

    Attributes:
        memory_mb: Virtual memory per process, in MiB.
        processes: Processes and threads at once.
        file_mb: Largest file a command may write, in MiB.
        tmp_mb: Size of the private ``/tmp``, in MiB.
    """

    memory_mb: int = DEFAULT_MEMORY_MB
    processes: int = DEFAULT_PROCESSES
    file_mb: int = DEFAULT_FILE_MB
    tmp_mb: int = DEFAULT_TMP_MB

    def __post_init__(self) -> None:
        for name in ("memory_mb", "processes", "file_mb", "tmp_mb"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started by a shell that first sets the hard limits (inside the sandbox)."""
        bash = argv[0]
        script = (f"ulimit -S -H -v {self.memory_mb * 1024} -u {self.processes} "
                  f"-f {self.file_mb * 1024} || exit 126; exec \"$@\"")
        return [bash, "-c", script, "limits", *argv]

    def explain(self, exit_code: int | None, stderr: str, *, pids_hit: bool = False
                ) -> str | None:
        """One sentence naming the limit a command ran into, or None when none shows."""
        if exit_code in (128 + signal.SIGXFSZ, -signal.SIGXFSZ) \
                or "File size limit exceeded" in stderr:
            return (f"A file reached the size limit of {self.file_mb} MiB and the program "
                    "writing it was stopped (setting command_file_mb).")
        if any(text in stderr for text in _NO_SPACE):
            return (f"No space was left: the private /tmp holds {self.tmp_mb} MiB (setting "
                    "command_tmp_mb), or the working folder's disk is full.")
        if any(text in stderr for text in _NO_MEMORY):
            return (f"The command ran out of memory: each process may use {self.memory_mb} MiB "
                    "(setting command_memory_mb).")
        if pids_hit or any(text in stderr for text in _FORK_FAILED):
            return (f"The command reached the limit of {self.processes} processes and could "
                    "not start more (setting command_processes).")
        return None

    def uncapped_timeout(self, time_limit: float) -> str:
        """The sentence for a command stopped by its time limit where processes are not capped."""
        return (f"The command was stopped by its time limit of {time_limit:g} s: this machine "
                f"cannot cap how many processes a command starts (the limit of "
                f"{self.processes} does not hold here), so nothing stopped it sooner.")


class PidsGroup:
    """A ``pids`` cgroup of one command, for root (whom ``RLIMIT_NPROC`` does not bind).

    Made under cgroup v1's ``pids`` hierarchy or, on cgroup v2, next to the
    app's own cgroup when the ``pids`` controller is enabled there. The
    command's first process joins it before it starts bubblewrap (see
    :meth:`wrap`), so nothing it forks escapes.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def make(cls, processes: int) -> PidsGroup | None:
        """A new group limited to ``processes``, or None where none can be made."""
        for parent in _pids_parents():
            folder = parent / f"desktop-agent-{os.urandom(6).hex()}"
            try:
                folder.mkdir()
            except OSError:
                continue
            try:
                (folder / "pids.max").write_text(str(processes))
            except OSError:
                with contextlib.suppress(OSError):
                    folder.rmdir()
                continue
            return cls(folder)
        return None

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started by a shell that first moves itself into this group."""
        sh = shutil.which("sh") or "/bin/sh"
        return [sh, "-c", 'echo $$ > "$0" && exec "$@"', str(self.folder / "cgroup.procs"),
                *argv]

    def hit(self) -> bool:
        """True when a fork was refused because the group was full."""
        try:
            for line in (self.folder / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max" and count.strip() not in ("", "0"):
                    return True
        except OSError:
            pass
        return False

    def remove(self) -> None:
        """Kill what is left in the group and remove it."""
        with contextlib.suppress(OSError):
            for pid in (self.folder / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
        for _ in range(10):  # the killed processes may take a moment to be reaped
            try:
                self.folder.rmdir()
                return
            except OSError as exc:
                error = exc
            time.sleep(0.005)
        log.debug("could not remove %s yet: %s", self.folder, error)


def _pids_parents() -> list[Path]:
    """Where a root app may make a ``pids`` cgroup, most specific first."""
    if os.geteuid() != 0:
        return []
    found: list[Path] = []
    v1 = Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").exists():
        found.append(v1)
    v2 = Path("/sys/fs/cgroup")
    try:
        if "pids" in (v2 / "cgroup.subtree_control").read_text().split():
            found.append(v2)
    except OSError:
        pass
    return found
