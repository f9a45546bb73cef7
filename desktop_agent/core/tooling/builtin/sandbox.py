"""Where a command may reach: the OS sandbox around ``bash`` and REST commands.

A :class:`SandboxPolicy` says how much a command may touch (``workdir``: the
working folder read-write; ``read_only``: the working folder read-only;
``off``: no sandbox) and whether it may use the network. :func:`launch`
turns a policy into the argv that runs a command under it:

* Linux: **bubblewrap** (``bwrap``). The command sees ``/usr`` and the other
  system folders read-only, a short list of ``/etc`` files (users, locale,
  certificates, name resolution), a private ``/tmp``, a fresh ``/proc`` showing
  only its own processes, a minimal ``/dev``, and the working folder. Nothing
  else exists for it: not the person's home, not the app's data folder (also
  blanked out when it lies inside the working folder), not other
  conversations' folders. It gets its own network namespace (only a loopback
  that leads nowhere) unless the policy grants the network, its own session
  (no terminal injection), and dies with its parent. ``/proc/sys``,
  ``/proc/sysrq-trigger``, ``/proc/irq``, ``/proc/bus`` and ``/proc/fs`` are
  read-only inside. Run as root, the command gets a user namespace of its own
  and runs there as uid :data:`SANDBOX_UID` with every capability dropped: it
  cannot remount, chroot or trace its way out, and the kernel settings that
  root could otherwise write (``/proc/sys/kernel/core_pattern`` runs a program
  as the real root) stay read-only.
* macOS: ``sandbox-exec`` with the profile ``macos_sandbox.sb`` next to this
  module (the same rules; written and documented, not tested on Linux CI).
* Anywhere else, or with ``off``: no sandbox. Such a command is marked
  *unsandboxed*; front ends say so before the person approves it, and rules
  never let it run unasked.

The environment is built here too (:func:`command_environment`): a command
never inherits the app's environment, which may hold the REST master key or
provider keys.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from desktop_agent.core.tooling.builtin.command_limits import CommandLimits, PidsGroup

log = logging.getLogger("desktop_agent.tools.sandbox")

SandboxLevel = Literal["workdir", "read_only", "off"]
#: Every level, strictest last; ``workdir`` is the default.
SANDBOX_LEVELS: tuple[str, ...] = get_args(SandboxLevel)


#: PATH inside (and outside) the sandbox: the system's folders only.
COMMAND_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# System folders shown read-only. On merged-/usr systems most are symlinks
# into /usr and are recreated as symlinks.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The parts of /etc programs need to run; not shadow files, not ssh keys.
_ETC_ENTRIES = (
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "crypto-policies",
    "debian_version", "gai.conf", "group", "host.conf", "hostname", "hosts", "inputrc",
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias", "locale.conf", "localtime",
    "magic", "magic.mime", "mime.types", "nsswitch.conf", "os-release", "passwd", "pki",
    "profile", "protocols", "python3", "resolv.conf", "services", "ssl", "terminfo", "timezone",
)
# Kernel knobs under /proc that root may write even without capabilities
# (sysctl files check the uid, not a capability): covered read-only inside.
_PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
# /run holds nothing a command needs; bounded so it is no way around the /tmp limit.
_RUN_SIZE = 1 << 20
#: The uid and gid a command runs as inside the sandbox when the app runs as root.
SANDBOX_UID = 1000
_LANG = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """How far one conversation's commands may reach.

    Attributes:
        level: ``workdir`` (default: the working folder read-write, the rest of
            the system read-only, home and the data folder invisible),
            ``read_only`` (the same with the working folder read-only) or
            ``off`` (no sandbox; the person is warned before approving).
        network: Whether commands may use the network (default False).
        hidden: Folders blanked out even when they lie inside the working
            folder (the app passes its data folder).
        limits: Memory, processes, file size and ``/tmp`` of each command
            (applied inside the sandbox; level ``off`` runs unbounded).
    """

    level: SandboxLevel = "workdir"
    network: bool = False
    hidden: tuple[str, ...] = field(default=())
    limits: CommandLimits = field(default_factory=CommandLimits)

    def __post_init__(self) -> None:
        if self.level not in SANDBOX_LEVELS:
            raise ValueError(f"sandbox level must be one of {', '.join(SANDBOX_LEVELS)}, "
                             f"not {self.level!r}")
        if not isinstance(self.network, bool):
            raise ValueError("network must be true or false")

    @property
    def sandboxed(self) -> bool:
        """True when commands under this policy run inside an OS sandbox here."""
        return self.level != "off" and sandbox_backend() is not None


@dataclass(frozen=True, slots=True)
class Launch:
    """The argv for one command, and what to clean up after it.

    Attributes:
        argv: The program and arguments to start.
        sandboxed: False when the command runs with the account's full rights.
        cleanup: Called once the command and its children are gone.
        pass_fds: Descriptors the program must inherit (the pinned workdir).
        limits: The limits applied, or None when the command runs unbounded.
        pids_hit: True once a fork was refused by the process cgroup (root only).
        processes_capped: False when this machine cannot cap the command's
            processes (then only its time limit stops a fork bomb).
    """

    argv: list[str]
    sandboxed: bool
    cleanup: Callable[[], None] = lambda: None
    pass_fds: tuple[int, ...] = ()
    limits: CommandLimits | None = None
    pids_hit: Callable[[], bool] = lambda: False
    processes_capped: bool = True


#: Why commands would run unsandboxed when bubblewrap is missing, with how to install it.
NO_BWRAP = "bubblewrap is not installed"
INSTALL_BWRAP = ("Install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: "
                 "sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap; or run "
                 "bash scripts/install.sh again), then restart the app.")


def sandbox_backend() -> str | None:
    """``"bwrap"`` or ``"sandbox-exec"`` when a working sandbox exists here, else None.

    bubblewrap needs user namespaces when not run as root; some kernels and
    containers forbid them, so the first call runs ``bwrap ... true`` once to
    find out instead of trusting that the binary exists.
    """
    return _probe()[0]


def sandbox_problem() -> str | None:
    """Why this machine has no command sandbox, in words (None when it has one)."""
    return _probe()[1]


@functools.cache
def _probe() -> tuple[str | None, str | None]:
    if sys.platform.startswith("linux"):
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            log.warning("bubblewrap (bwrap) is not installed; commands run unsandboxed")
            return None, NO_BWRAP
        probe = [bwrap, *_bwrap_base(network=False), *_system_arguments(), "--", "true"]
        try:
            done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("bubblewrap does not start (%s); commands run unsandboxed", exc)
            return None, f"bubblewrap does not start ({exc})"
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip()[:300]
            log.warning("bubblewrap cannot make a sandbox here (%s); commands run unsandboxed",
                        reason)
            return None, f"bubblewrap cannot make a sandbox here ({reason})"
        return "bwrap", None
    if sys.platform == "darwin" and shutil.which("sandbox-exec"):
        return "sandbox-exec", None
    return None, f"no command sandbox exists for {sys.platform}"


@functools.cache
def processes_capped() -> bool:
    """Whether a sandboxed command's process limit holds on this machine (probes once).

    As root it holds through a ``pids`` cgroup the app can make. Otherwise it
    rests on ``RLIMIT_NPROC`` inside bubblewrap's user namespace, which some
    kernels do not apply there (root's own namespace on many; a normal user's
    where the kernel counts the user's processes elsewhere): a fork bomb then
    runs until its time limit. So it is tried, not assumed: with the limit at
    one process, a command that forks must be refused.
    """
    if os.geteuid() == 0:
        group = PidsGroup.make(1)
        if group is not None:
            group.remove()
            return True
    return _nproc_binds()


@functools.cache
def _nproc_binds() -> bool:
    bwrap = shutil.which("bwrap")
    if sandbox_backend() != "bwrap" or bwrap is None:
        return False
    # `timeout` forks once and says so at once when it cannot (bash would retry for 15 s).
    probe = [bwrap, *_bwrap_base(network=False), *_system_arguments(), "--", "bash", "-c",
             "ulimit -S -H -u 1 || exit 126; exec timeout 5 true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("could not learn whether commands' processes can be capped: %s", exc)
        return False
    if done.returncode != 125:
        log.warning("commands' processes cannot be capped here (no pids cgroup, and the "
                    "process limit does not hold in the sandbox): a runaway command runs "
                    "until its time limit")
    return done.returncode == 125


def command_environment(workdir: Path, secrets: Mapping[str, str] | None = None
                        ) -> dict[str, str]:
    """The whole environment of a command: built, never inherited.

    PATH (system folders), HOME (the working folder, so tools that write
    dotfiles write them there), LANG, TERM, and the conversation's own
    secrets. The app's environment (API keys, the REST master key, tokens of
    whoever started the app) never reaches a command.
    """
    lang = os.environ.get("LANG", "")
    env = {
        "PATH": COMMAND_PATH,
        "HOME": str(workdir),
        "LANG": lang if _LANG.match(lang) else "C.UTF-8",
        "TERM": "dumb",
    }
    for name, value in (secrets or {}).items():
        if name in env:
            log.warning("secret %s would replace the command's %s; not set", name, name)
            continue
        env[name] = value
    return env


@functools.cache
def _bwrap_0_8() -> bool:
    """True for bubblewrap 0.8 or later: ``--bind-fd`` (an open folder) and ``--size`` (tmpfs)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--bind-fd" in done.stdout + done.stderr


def launch(policy: SandboxPolicy, workdir: Path, argv: Sequence[str], *,
           root_fd: int | None = None) -> Launch:
    """The argv that runs ``argv`` in ``workdir`` under ``policy`` on this system.

    ``root_fd``: an open descriptor of ``workdir`` (checked by the caller to be
    the folder it pinned). bubblewrap then mounts that very folder, not
    whatever the path leads to by the time it runs.
    """
    backend = sandbox_backend() if policy.level != "off" else None
    if backend == "bwrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        fd = root_fd if root_fd is not None and _bwrap_0_8() else None
        limits = policy.limits
        outer = [bwrap, *bwrap_arguments(policy, workdir, root_fd=fd), "--",
                 *limits.wrap(list(argv))]
        group = PidsGroup.make(limits.processes) if os.geteuid() == 0 else None
        if group is None:
            return Launch(outer, True, pass_fds=() if fd is None else (fd,), limits=limits,
                          processes_capped=_nproc_binds())
        return Launch(group.wrap(outer), True, group.remove,
                      pass_fds=() if fd is None else (fd,), limits=limits, pids_hit=group.hit)
    if backend == "sandbox-exec":
        return _sandbox_exec(policy, workdir, argv)
    return Launch(list(argv), False)


def _bwrap_base(*, network: bool, run_as: tuple[int, int] | None = None) -> list[str]:
    """The namespaces and the identity of every sandbox.

    ``run_as``: the uid and gid the command gets in a user namespace of its
    own, with every capability dropped (None: root gets :data:`SANDBOX_UID`,
    anyone else bubblewrap's default, their own uid).
    """
    args = ["--unshare-all", "--die-with-parent", "--new-session"]
    if network:
        args.append("--share-net")
    if run_as is None and os.geteuid() == 0:
        # Root outside stays root inside unless told otherwise: give the
        # command a user namespace of its own, a non-zero uid in it, and no
        # capabilities, so it cannot mount, chroot or trace its way out.
        run_as = (SANDBOX_UID, SANDBOX_UID)
    if run_as is not None:
        args += ["--unshare-user", "--uid", str(run_as[0]), "--gid", str(run_as[1]),
                 "--cap-drop", "ALL"]
    return args


def bwrap_arguments(policy: SandboxPolicy, workdir: Path, *, root_fd: int | None = None,
                    folder_source: str | None = None,
                    run_as: tuple[int, int] | None = None) -> list[str]:
    """The options for ``bwrap`` under ``policy`` (everything before ``--``).

    ``folder_source``: what is mounted at the working folder's path instead of
    the folder itself (a preview's overlay; always read-write).
    ``run_as``: see :func:`_bwrap_base`.
    """
    root = Path(workdir).resolve()
    tmp_size = policy.limits.tmp_mb << 20 if _bwrap_0_8() else None
    args = [*_bwrap_base(network=policy.network, run_as=run_as), *_system_arguments(tmp_size)]
    read_only = policy.level == "read_only"
    if folder_source is not None:
        args += ["--bind", folder_source, str(root)]
    elif root_fd is not None:
        args += ["--ro-bind-fd" if read_only else "--bind-fd", str(root_fd), str(root)]
    else:
        args += ["--ro-bind" if read_only else "--bind", str(root), str(root)]
    for hidden in policy.hidden:
        target = Path(hidden).expanduser().resolve()
        if target != root and target.is_relative_to(root) and target.exists():
            if target.is_dir():
                args += ["--tmpfs", str(target)]
            else:
                args += ["--ro-bind", "/dev/null", str(target)]
    # The sandbox's own root (a tmpfs holding the mount points) is made
    # read-only last, so nothing can be written outside /tmp and the workdir.
    args += ["--remount-ro", "/", "--chdir", str(root)]
    return args


def _system_arguments(tmp_size: int | None = None) -> list[str]:
    """The read-only system, a private /tmp, /proc and /dev: the same for every command.

    ``tmp_size``: bytes the private ``/tmp`` and ``/var/tmp`` may hold each (None: no bound).
    """
    args: list[str] = []
    for folder in _SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    for entry in _ETC_ENTRIES:
        source = Path("/etc", entry)
        if source.exists():
            # Bind the target of a link (resolv.conf often points into /run).
            args += ["--ro-bind", str(source.resolve()), str(source)]
    args += ["--proc", "/proc"]
    for knob in _PROC_READ_ONLY:  # some kernels and containers lack a few of these
        args += ["--ro-bind-try", knob, knob]
    args += ["--dev", "/dev"]
    for folder, size in (("/tmp", tmp_size), ("/var/tmp", tmp_size), ("/run", _RUN_SIZE)):
        args += [*(["--size", str(size)] if tmp_size else []), "--tmpfs", folder]
    return args


_PROFILE = Path(__file__).with_name("macos_sandbox.sb")


def _sandbox_exec(policy: SandboxPolicy, workdir: Path, argv: Sequence[str]
                  ) -> Launch:  # pragma: no cover - macOS only
    private_tmp = tempfile.mkdtemp(prefix="desktop-agent-cmd-")
    home = str(Path.home())
    args = ["sandbox-exec", "-f", str(_PROFILE),
            "-D", f"WORKDIR={Path(workdir).resolve()}",
            "-D", f"WRITABLE={'1' if policy.level == 'workdir' else '0'}",
            "-D", f"NETWORK={'1' if policy.network else '0'}",
            "-D", f"TMPDIR={Path(private_tmp).resolve()}",
            "-D", f"HOME={home}",
            *argv]
    return Launch(args, True, lambda: shutil.rmtree(private_tmp, ignore_errors=True))
