"""A command run on an overlay: the working folder below, a private upper layer on top.

Debian 12's bubblewrap (0.8) has no ``--overlay``, so the overlay is
mounted by the kernel in a mount namespace of the command's own, made with
``unshare`` just before bubblewrap starts in it:

* as a normal user: ``unshare --user --map-root-user --mount`` (a user
  namespace in which the app may mount; unprivileged overlayfs needs Linux
  5.11), mounted with ``userxattr``, so overlayfs keeps its marks in
  ``user.overlay.*`` xattrs; bubblewrap then gives the command a user
  namespace of its own with the person's uid and no capabilities;
* as root: ``unshare --mount`` only (no user namespace, so copied-up files
  keep their owners), marks in ``trusted.overlay.*``; bubblewrap then does
  what it always does for root (uid :data:`~.sandbox.SANDBOX_UID`, no
  capabilities). In a container that gives root no ``CAP_SYS_ADMIN``, the
  user-namespace way is tried instead (:func:`mount_ways`).

The lower layer is the pinned working folder: opened again inside the new
namespace (overlayfs takes no lower layer from another namespace's mount)
and used only when it is the same folder as the app's pinned descriptor, so
a folder swapped for a link after the check cannot put anything else below.
Both descriptors are closed before bubblewrap starts, so the command cannot
reach the real folder through them. ``upperdir``,
``workdir`` and the mount point are relative to the preview's folder
(:class:`PreviewLayers`), so no path of the data folder needs escaping in the
mount options. ``redirect_dir`` and ``metacopy`` stay off: a moved folder is
copied up whole and every changed file's bytes are in the upper layer; the
layer is ``volatile`` (see :func:`_mount_options`).

bubblewrap binds the mounted overlay at the working folder's own path and
everything else stays as the sandbox has it (network as set, private
``/tmp``, the rest read-only, the data folder invisible). When the command
ends, its PID namespace dies with everything it started, and the mount
namespace with the overlay goes with it.

:func:`overlay_problem` says, once per folder, why previews cannot work here
(None when they can): it runs a real preview of a small command and reads
its upper layer back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop_agent.core.tooling.builtin.command_limits import PidsGroup
from desktop_agent.core.tooling.builtin.sandbox import (
    SANDBOX_UID,
    Launch,
    SandboxPolicy,
    bwrap_arguments,
    command_environment,
    sandbox_problem,
)

log = logging.getLogger("desktop_agent.tools.sandbox")

#: Exit status of the launcher when the overlay could not be mounted (before the command ran).
MOUNT_FAILED = 125
#: What the launcher prints on stderr when the mount failed, to tell it from a command's 125.
MOUNT_FAILED_MARK = "desktop-agent: the preview's overlay could not be mounted"

# Runs in the new mount namespace. overlayfs refuses a lower layer whose mount belongs
# to another namespace (the app's descriptor does), so the folder is opened again here,
# by its path, and used only if it is the very folder the app pinned (``-ef``: same
# device and inode); then both descriptors are closed and bubblewrap takes over.
_MOUNT_SCRIPT = (
    'cd -- "$1" || exit 125; folder=$2; pinned=$3; options=$4; shift 4; '
    'exec {lower}<"$folder" || exit 125; '
    'if ! [ /proc/self/fd/$lower -ef /proc/self/fd/$pinned ]; then '
    f'echo "{MOUNT_FAILED_MARK}: the working folder was replaced" >&2; exit {MOUNT_FAILED}; fi; '
    'if ! mount -t overlay desktop-agent-preview '
    '-o "lowerdir=/proc/self/fd/$lower,upperdir=upper,workdir=work,$options" merged; then '
    f'echo "{MOUNT_FAILED_MARK}" >&2; exit {MOUNT_FAILED}; fi; '
    'exec {lower}<&- {pinned}<&-; exec "$@"'
)


@dataclass(frozen=True, slots=True)
class PreviewLayers:
    """The folder of one preview: ``upper/`` (the changes), ``work/`` (overlayfs's), ``merged/``.

    Attributes:
        folder: ``<previews folder>/<id>``.
    """

    folder: Path

    @property
    def id(self) -> str:
        """The preview's id (its folder's name)."""
        return self.folder.name

    @property
    def upper(self) -> Path:
        """The upper layer: every change the command made."""
        return self.folder / "upper"

    @classmethod
    def make(cls, root: Path) -> PreviewLayers:
        """A new, empty preview folder under ``root`` (made, private to the app's account)."""
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = root / uuid.uuid4().hex[:16]
        folder.mkdir(mode=0o700)
        for name in ("upper", "work", "merged"):
            (folder / name).mkdir(mode=0o755 if name == "upper" else 0o700)
        return cls(folder)

    def remove(self) -> None:
        """Remove the preview folder and all in it (blocking)."""
        remove_tree(self.folder)

    def exists(self) -> bool:
        """Whether the folder is still there."""
        return self.folder.is_dir()


def remove_tree(folder: Path) -> None:
    """Remove ``folder`` even where the command left folders without permissions.

    overlayfs makes ``work/work`` with mode 000, and a command may ``chmod -R 000``
    what it made: the app owns all of it, so when a removal is refused it gives
    itself the right to enter every folder and tries again. Links are removed,
    never followed.
    """
    if not folder.is_dir() or folder.is_symlink():
        return
    try:
        shutil.rmtree(folder)
        return
    except FileNotFoundError:
        return
    except PermissionError:
        pass
    pending = [str(folder)]
    while pending:
        path = pending.pop()
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
            with os.scandir(path) as entries:
                pending.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
    shutil.rmtree(folder, ignore_errors=True)


#: Mounted by the app's own account in a new mount namespace (root: it may mount).
MOUNT_NAMESPACE = "mount namespace"
#: Mounted in a new user namespace too (a normal user; root where it lacks CAP_SYS_ADMIN).
USER_NAMESPACE = "user namespace"


def mount_ways() -> tuple[str, ...]:
    """How this process may mount a preview's overlay, the best first.

    Root mounts in a mount namespace of its own (copied-up files keep their
    owners); in a container without ``CAP_SYS_ADMIN`` that is refused, and a
    user namespace is tried as for a normal user.
    """
    return (MOUNT_NAMESPACE, USER_NAMESPACE) if os.geteuid() == 0 else (USER_NAMESPACE,)


def _mount_options(way: str) -> str:
    """``metacopy=off`` and ``volatile`` always; in a user namespace ``userxattr`` too.

    ``volatile`` drops overlayfs's syncs of the upper layer (it fsyncs every
    copied-up file otherwise): the layer is thrown away or copied out, never
    used after a crash, and a synced file costs the disk a write now and a
    discard when the preview is removed (seconds for a thousand files on a
    disk mounted with ``discard``).
    """
    if way == MOUNT_NAMESPACE:
        return "redirect_dir=off,metacopy=off,volatile"
    return "userxattr,metacopy=off,volatile"  # userxattr keeps redirects off too


def overlay_launch(policy: SandboxPolicy, workdir: Path, argv: Sequence[str],
                   layers: PreviewLayers, root_fd: int, way: str | None = None) -> Launch:
    """The argv that runs ``argv`` sandboxed on an overlay of ``workdir`` in ``layers``.

    ``root_fd``: the pinned working folder (the lower layer); it is passed to
    the launcher, which closes it before bubblewrap starts. ``way``: one of
    :func:`mount_ways` (default: the one the probe found working for the
    layers' disk).
    """
    unshare = shutil.which("unshare") or "unshare"
    bwrap = shutil.which("bwrap") or "bwrap"
    bash = shutil.which("bash") or "bash"
    as_root = os.geteuid() == 0
    way = way or _way_for(layers.folder)
    # In a user namespace the launcher is uid 0 there: bubblewrap must be told to give
    # the command the uid it gets outside (the person's own; root's SANDBOX_UID) and no
    # capabilities, as it does without an overlay.
    run_as = None if way == MOUNT_NAMESPACE else \
        (SANDBOX_UID, SANDBOX_UID) if as_root else (os.getuid(), os.getgid())
    limits = policy.limits
    inner = [bwrap, *bwrap_arguments(policy, workdir, folder_source=str(layers.folder / "merged"),
                                     run_as=run_as),
             "--", *limits.wrap(list(argv))]
    namespaces = [unshare, "--mount", "--propagation", "private"]
    if way == USER_NAMESPACE:
        namespaces += ["--user", "--map-root-user"]
    outer = [*namespaces, "--", bash, "-c", _MOUNT_SCRIPT, "overlay-preview",
             str(layers.folder), str(Path(workdir).resolve()), str(root_fd),
             _mount_options(way), *inner]
    group = PidsGroup.make(limits.processes) if as_root else None
    if group is None:
        return Launch(outer, True, pass_fds=(root_fd,), limits=limits)
    return Launch(group.wrap(outer), True, group.remove, pass_fds=(root_fd,), limits=limits,
                  pids_hit=group.hit)


_probed: dict[int, str | None] = {}
_ways: dict[int, str] = {}  # disk -> the way of mounting that worked there
_probing = threading.Lock()


def _way_for(folder: Path) -> str:
    try:
        return _ways.get(os.stat(folder).st_dev, mount_ways()[0])
    except OSError:
        return mount_ways()[0]


def overlay_problem(folder: Path) -> str | None:
    """Why commands cannot be previewed with upper layers in ``folder`` (None: they can).

    Makes the folder, then probes once per disk (a real preview of a small
    command whose upper layer lies in ``folder``) and remembers the answer for
    the app's life: what decides is the kernel, bubblewrap and the file system
    the upper layers live on. Blocking.
    """
    try:
        Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
        device = os.stat(folder).st_dev
    except OSError as exc:
        return f"the data folder cannot hold a preview ({exc.strerror or exc})"
    with _probing:
        if device not in _probed:
            _probed[device] = _probe(str(Path(folder).resolve()), device)
        return _probed[device]


def _probe(folder: str, device: int) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"previews need Linux's overlay file system; this is {sys.platform}"
    problem = sandbox_problem()
    if problem is not None:
        return f"previews run inside the command sandbox, and there is none here: {problem}"
    for tool in ("unshare", "mount", "bash"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (util-linux)" if tool != "bash" \
                else "bash is not installed"
    problems: list[str] = []
    for way in mount_ways():
        try:
            problem = try_preview(Path(folder), way)
        except OSError as exc:
            return f"the data folder cannot hold a preview ({exc.strerror or exc})"
        if problem is None:
            _ways[device] = way
            return None
        log.info("no preview overlay in a %s here: %s", way, problem)
        problems.append(problem)
    return problems[0]


def try_preview(root: Path, way: str) -> str | None:
    """Run ``echo > made; rm gone`` on an overlay and check the upper layer says so."""
    from desktop_agent.core.tooling.builtin.overlay_changes import read_changes

    probe = root / f".probe-{uuid.uuid4().hex[:8]}"
    probe.mkdir(mode=0o700, parents=True)
    try:
        lower = probe / "folder"
        lower.mkdir()
        (lower / "gone").write_text("gone\n")
        layers = PreviewLayers.make(probe / "layers")
        fd = os.open(lower, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            bash = shutil.which("bash") or "bash"
            plan = overlay_launch(SandboxPolicy(), lower,
                                  [bash, "-c", "echo made > made; rm gone"], layers, fd, way)
            try:
                done = subprocess.run(plan.argv, capture_output=True, timeout=30, check=False,
                                      pass_fds=plan.pass_fds, cwd=lower,
                                      env=command_environment(lower))
            finally:
                plan.cleanup()
            if done.returncode != 0:
                reason = done.stderr.decode(errors="replace").strip().splitlines()
                shown = "; ".join(line for line in reason if MOUNT_FAILED_MARK not in line)[:300]
                release = os.uname().release
                return (f"the kernel ({release}) did not mount an overlay for the command "
                        f"({shown or f'exit status {done.returncode}'}); unprivileged overlays "
                        "need Linux 5.11 or later")
            changes = read_changes(str(layers.upper), fd)
        finally:
            os.close(fd)
        found = {(c.path, c.change) for c in changes.changes}
        if found != {("made", "created"), ("gone", "deleted")}:
            return ("the overlay's upper layer did not read back as expected "
                    f"({sorted(found)}); the data folder's file system may not keep "
                    "overlayfs's marks (extended attributes)")
        return None
    except subprocess.TimeoutExpired:
        return "a trial preview did not finish within 30 s"
    finally:
        remove_tree(probe)
