"""Writing into a working folder without ever following a link out of it.

Checking a path (``lstat``) and then writing through the same path string
loses to a program that swaps a folder for a symlink in between: the write
follows the new link out of the working folder. So every write here starts
from a descriptor of the folder, opens each folder on the way relative to the
one before with ``O_DIRECTORY | O_NOFOLLOW``, and acts on the last name
relative to its folder's descriptor (``openat``, ``renameat``,
``symlinkat``, ``unlinkat``...): the kernel never resolves a link the folder
holds. On the way to a write, anything that is not a real folder (a link, a
file) is replaced by one, since the write says a folder belongs there; to a
removal, a chmod or a stat it makes the path absent.

A new file, link, hard link or FIFO is made under a temporary name in the
same folder (so a temporary file never lands outside either) and takes its
name with one rename: each is all there or not at all. Folders are removed
by a walk of their own descriptors (``shutil.rmtree`` opens without
``O_DIRECTORY``, which blocks on a FIFO swapped in for a folder).

POSIX only, as the checkpoints are (``openat`` and friends).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from types import TracebackType

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_REWRITE_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
_NOT_A_FOLDER = (errno.ENOTDIR, errno.ELOOP, errno.EMLINK)  # EMLINK: a link, on the BSDs
_A_FOLDER = (errno.EISDIR, errno.EPERM)  # unlink of a folder: Linux says EISDIR, macOS EPERM
_TRIES = 16
"""Attempts at one name while something keeps changing it (or taking it), before giving up."""


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{rel!r} is not a relative path inside the working folder")
    return parts


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class FolderWriter:
    """Every kind of write into one working folder, none of them through a link.

    Paths are relative POSIX paths (``src/app.py``) without ``.``, ``..`` or
    empty parts. An ``OSError`` names the full path it was about. Keep one
    writer for a batch of writes (it holds the folder open) and close it.

    Args:
        root: The working folder (a link to it is followed: the person chose it).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self._root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)

    def close(self) -> None:
        """Let go of the folder."""
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    def __enter__(self) -> FolderWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------
    def write_file(self, rel: str, data: bytes, mode: int, *, in_place: bool = False,
                   durable: bool = False) -> None:
        """Make ``rel`` a regular file holding ``data``, with permission bits ``mode``.

        Whatever was there (a file, a link, a FIFO, a folder and all in it) is
        replaced through a temporary file and a rename.

        Args:
            rel: The path.
            data: The whole contents.
            mode: Permission bits (not cut by the umask).
            in_place: Rewrite a regular file that has no other name through its
                own descriptor instead: no new inode, much cheaper on a busy
                disk, but a crash midway leaves it half written. A file with
                other hard links (which may lie outside) is always replaced.
            durable: ``fsync`` the file and its folder before returning.
        """
        def write(fd: int, name: str) -> None:
            if in_place and _rewrite(fd, name, data, mode, durable):
                return
            _install(fd, name, lambda temporary: _new_file(fd, temporary, data, mode, durable))
            if durable:
                os.fsync(fd)

        self._making(rel, write)

    def copy_file(self, rel: str, source: int, mode: int, *, durable: bool = False) -> None:
        """Make ``rel`` a regular file holding what the open file ``source`` holds.

        As :meth:`write_file` (a temporary file renamed into place: all there
        or not at all), but the bytes are copied from descriptor to descriptor
        (``copy_file_range`` where the kernel has it), so a file of gigabytes
        never sits in memory. ``source`` is read from its start.
        """
        def write(fd: int, name: str) -> None:
            _install(fd, name, lambda temporary: _copied_file(fd, temporary, source, mode,
                                                              durable))
            if durable:
                os.fsync(fd)

        self._making(rel, write)

    def make_dir(self, rel: str, mode: int = 0o700) -> None:
        """Make ``rel`` a real folder: made with ``mode`` (less the umask) if missing.

        A folder already there keeps its mode (see :meth:`chmod`); a link or a
        file there is replaced by a new folder.
        """
        def make(fd: int, name: str) -> None:
            folder = _enter(fd, name, make=True, mode=mode)
            if folder is not None:  # always, when making
                os.close(folder)

        self._making(rel, make)

    def symlink(self, rel: str, target: str) -> None:
        """Make ``rel`` a symlink whose text is ``target`` (never followed, never checked)."""
        self._making(rel, lambda fd, name: _install(
            fd, name, lambda temporary: os.symlink(target, temporary, dir_fd=fd)))

    def hard_link(self, rel: str, existing: str) -> None:
        """Make ``rel`` another name of what is at ``existing`` (a link: the link itself).

        Raises:
            FileNotFoundError: Nothing at ``existing`` inside the folder.
        """
        with self._parent(existing, make=False) as (source_fd, source):
            if source_fd < 0:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            with self._parent(rel, make=True) as (fd, name):
                _install(fd, name, lambda temporary: os.link(
                    source, temporary, src_dir_fd=source_fd, dst_dir_fd=fd,
                    follow_symlinks=False))

    def make_fifo(self, rel: str, mode: int) -> None:
        """Make ``rel`` a FIFO (named pipe) with permission bits ``mode``."""
        def make(fd: int, name: str) -> None:
            def fifo(temporary: str) -> None:
                os.mkfifo(temporary, 0o600, dir_fd=fd)
                _chmod_at(fd, temporary, mode)

            _install(fd, name, fifo)

        self._making(rel, make)

    def chmod(self, rel: str, mode: int) -> None:
        """Set the permission bits of ``rel`` itself; a link's own mode is left as it is.

        Raises:
            FileNotFoundError: Nothing at ``rel`` inside the folder.
        """
        with self._parent(rel, make=False) as (fd, name):
            if fd < 0:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            _chmod_at(fd, name, mode)

    def set_times(self, rel: str, atime_ns: int, mtime_ns: int) -> None:
        """Set the access and modification times of ``rel`` itself (a link's own, if a link).

        Raises:
            FileNotFoundError: Nothing at ``rel`` inside the folder.
        """
        with self._parent(rel, make=False) as (fd, name):
            if fd < 0:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            os.utime(name, ns=(atime_ns, mtime_ns), dir_fd=fd, follow_symlinks=False)

    def rename(self, old: str, new: str) -> None:
        """Move ``old`` to ``new`` (as ``os.replace``: a folder replaces only an empty folder).

        Raises:
            FileNotFoundError: Nothing at ``old`` inside the folder.
        """
        with self._parent(old, make=False) as (old_fd, old_name):
            if old_fd < 0:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            with self._parent(new, make=True) as (fd, name):
                os.replace(old_name, name, src_dir_fd=old_fd, dst_dir_fd=fd)

    # -- removing -----------------------------------------------------------------------
    def remove(self, rel: str) -> bool:
        """Remove the file, link or FIFO at ``rel``; False when there was nothing.

        Raises:
            IsADirectoryError: ``rel`` is a folder (on Linux; ``PermissionError`` on macOS).
        """
        with self._parent(rel, make=False) as (fd, name):
            if fd < 0:
                return False
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                return False
            return True

    def remove_dir(self, rel: str) -> bool:
        """Remove the empty folder at ``rel``; False when there was nothing.

        Raises:
            OSError: It holds something (``ENOTEMPTY``) or is not a folder (``ENOTDIR``).
        """
        with self._parent(rel, make=False) as (fd, name):
            if fd < 0:
                return False
            try:
                os.rmdir(name, dir_fd=fd)
            except FileNotFoundError:
                return False
            return True

    def remove_tree(self, rel: str) -> bool:
        """Remove whatever is at ``rel``, a folder with all in it; False when there was nothing."""
        with self._parent(rel, make=False) as (fd, name):
            if fd < 0:
                return False
            try:
                _remove_tree_at(fd, name)
            except FileNotFoundError:
                return False
            return True

    # -- reading ------------------------------------------------------------------------
    def stat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel`` reached without a link on the way; None when absent."""
        with self._parent(rel, make=False) as (fd, name):
            if fd < 0:
                return None
            try:
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None

    # -- the walk -----------------------------------------------------------------------
    def _making(self, rel: str, action: Callable[[int, str], None]) -> None:
        """Run ``action(folder_fd, name)`` in the folder that holds ``rel``, made real.

        A folder removed while the action worked in it (someone else's
        ``rm -r`` or rename) is walked to again, the path made anew, a few
        times before its ``FileNotFoundError`` is let through.
        """
        for attempt in range(_TRIES):
            with self._parent(rel, make=True) as (fd, name):
                try:
                    action(fd, name)
                    return
                except FileNotFoundError:
                    if attempt == _TRIES - 1:
                        raise

    @contextlib.contextmanager
    def _parent(self, rel: str, *, make: bool) -> Iterator[tuple[int, str]]:
        """The descriptor of the folder holding ``rel`` and its last name.

        ``make``: make each folder on the way real (made, or put in place of a
        link or a file). Otherwise a missing folder or anything else on the
        way yields the descriptor -1: the path does not exist in the folder.
        An ``OSError`` raised in the block is given the full path.
        """
        parts = _parts(rel)
        if self._root_fd < 0:
            raise ValueError("the folder writer is closed")
        fd = self._root_fd
        try:
            for name in parts[:-1]:
                inner = _enter(fd, name, make=make)
                if fd != self._root_fd:
                    os.close(fd)
                fd = inner if inner is not None else -1
                if fd < 0:
                    break
            yield fd, parts[-1]
        except OSError as exc:
            if not (isinstance(exc.filename, str) and exc.filename.startswith(self.root + os.sep)):
                exc.filename = os.path.join(self.root, rel)  # unless an inner walk named it
            raise
        finally:
            if fd not in (-1, self._root_fd):
                os.close(fd)


def _enter(parent: int, name: str, *, make: bool, mode: int = 0o700) -> int | None:
    """Open the folder ``name`` of ``parent``, never through a link.

    ``make``: a missing folder is made, and a link or a file in its place is
    replaced by a folder (tried again while something keeps swapping it).
    Otherwise None when it is missing or not a folder.
    """
    for _ in range(_TRIES):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not make:
                return None
        except OSError as exc:
            if exc.errno not in _NOT_A_FOLDER:
                raise
            if not make:
                return None
            try:
                os.unlink(name, dir_fd=parent)
            except OSError as gone:
                if gone.errno != errno.ENOENT and gone.errno not in _A_FOLDER:
                    raise  # not ours to remove: say so rather than loop
        with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: open it
            os.mkdir(name, mode, dir_fd=parent)
    raise OSError(errno.EAGAIN, f"{name!r} kept changing while it was being made a folder")


def _install(fd: int, name: str, make: Callable[[str], None]) -> None:
    """Make a new entry with ``make`` under a fresh temporary name, then rename it to ``name``.

    A folder at ``name`` (which a rename cannot replace with a non-folder) is
    removed first, with everything in it.
    """
    for _ in range(_TRIES):
        temporary = f".desktop-agent-{os.getpid()}-{secrets.token_hex(6)}.tmp"
        try:
            make(temporary)
        except FileExistsError:
            continue  # the name was taken: draw another
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=fd)
            raise
        break
    else:
        raise OSError(errno.EEXIST, "no free temporary name", name)
    try:
        try:
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                raise
            _remove_tree_at(fd, name)
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=fd)
        raise


def _new_file(fd: int, name: str, data: bytes, mode: int, durable: bool) -> None:
    out = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=fd)
    try:
        _write_all(out, data)
        os.fchmod(out, mode)
        if durable:
            os.fsync(out)
    finally:
        os.close(out)


def _copied_file(fd: int, name: str, source: int, mode: int, durable: bool) -> None:
    out = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=fd)
    try:
        os.lseek(source, 0, os.SEEK_SET)
        _copy_all(source, out)
        os.fchmod(out, mode)
        if durable:
            os.fsync(out)
    finally:
        os.close(out)


def _copy_all(source: int, out: int) -> None:
    """Copy ``source`` to ``out`` from their positions to the end of ``source``."""
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        try:
            while copy_range(source, out, 1 << 30):
                pass
            return
        except OSError as exc:  # another file system, an old kernel: copy by hand
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            os.lseek(source, 0, os.SEEK_SET)
            os.ftruncate(out, 0)
            os.lseek(out, 0, os.SEEK_SET)
    while chunk := os.read(source, 1 << 20):
        _write_all(out, chunk)


def _rewrite(fd: int, name: str, data: bytes, mode: int, durable: bool) -> bool:
    """Rewrite ``name`` through its own descriptor if it is a regular file with one name."""
    try:
        before = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(before.st_mode) or before.st_nlink != 1:
        return False  # opening a FIFO or a device could block or act: never tried
    try:
        out = os.open(name, _REWRITE_FLAGS, dir_fd=fd)
    except OSError:
        return False  # not writable by us, or swapped meanwhile: replaced instead
    try:
        opened = os.fstat(out)
        if not stat.S_ISREG(opened.st_mode) or opened.st_nlink != 1:
            return False
        _write_all(out, data)
        os.ftruncate(out, len(data))
        os.fchmod(out, mode)
        if durable:
            os.fsync(out)
    finally:
        os.close(out)
    return True


def _chmod_at(fd: int, name: str, mode: int) -> None:
    try:
        os.chmod(name, mode, dir_fd=fd, follow_symlinks=False)
    except (NotImplementedError, ValueError):
        # No fchmodat(AT_SYMLINK_NOFOLLOW) for this entry: glibc refuses it for a link
        # (whose own mode Linux ignores), an older one for everything. Do what a newer
        # glibc does: pin the entry with O_PATH and change it through /proc.
        pinned = os.open(name, os.O_PATH | os.O_NOFOLLOW | _CLOEXEC, dir_fd=fd)
        try:
            if not stat.S_ISLNK(os.fstat(pinned).st_mode):
                os.chmod(f"/proc/self/fd/{pinned}", mode)
        finally:
            os.close(pinned)


def _remove_tree_at(parent: int, name: str) -> None:
    """Remove ``name`` of ``parent`` and, if a folder, everything in it; never through a link.

    A loop over a stack, not recursion: a deep tree must not exhaust Python's stack.
    """
    try:
        os.unlink(name, dir_fd=parent)
        return
    except OSError as exc:
        if exc.errno not in _A_FOLDER:
            raise
        first = exc
    top = _enter(parent, name, make=False)
    if top is None:
        raise first  # not a folder after all: the unlink's own refusal stands
    # Each level: the folder's descriptor, its parent's, its name, the names left in it.
    levels: list[tuple[int, int, str, list[str]]] = [(top, parent, name, [])]
    try:
        levels[-1][3].extend(os.listdir(top))
        while levels:
            fd, above, own, left = levels[-1]
            if not left:
                levels.pop()
                os.close(fd)
                os.rmdir(own, dir_fd=above)
                continue
            child = left.pop()
            try:
                os.unlink(child, dir_fd=fd)
                continue
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno not in _A_FOLDER:
                    raise
                refused = exc
            inner = _enter(fd, child, make=False)
            if inner is None:
                raise refused
            levels.append((inner, fd, child, []))
            levels[-1][3].extend(os.listdir(inner))
    finally:
        for fd, *_ in levels:
            os.close(fd)
