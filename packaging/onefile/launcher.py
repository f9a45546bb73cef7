"""The one ``desktop-agent`` file: unpack the app once per build, then start it from there.

PyInstaller's one-file mode unpacks every library of the app (about 160 MB) into a
new temporary folder on every launch and deletes it on exit: most of the one file's
start-up time (1.22 s to first paint against 0.78 s from source). So the one file
people download is this small launcher (a minimal PyInstaller one-file program:
Python and this script), with the app's onedir build appended to it as an xz
tarball, then a second copy of the launcher's own PyInstaller archive, then a trailer
saying where the tarball starts. (PyInstaller's bootloader looks for its archive by
scanning back from the end of the file: behind 70 MB of tarball that scan cost about a
second on every launch; with its archive last again, it finds it at once.) The first
launch of a build unpacks it into the user's cache folder
(``~/.cache/desktop-agent/bundles/<version>-<digest>``, ``%LOCALAPPDATA%`` on Windows,
``~/Library/Caches`` on macOS; ``DESKTOP_AGENT_BUNDLE_CACHE`` overrides it); every later
launch finds that folder and replaces itself with the app there (``exec``), which
starts like the onedir build. A new build has a new digest,
so it unpacks next to the old one and the old folders are removed.

``build.spec`` imports :func:`append_payload` to write the trailer, so the format is
defined once, here. The launcher's own start imports only ``os``, ``struct`` and
``sys``; the unpacking modules load on a first launch only.
"""

from __future__ import annotations

import os
import struct
import sys

MAGIC = b"DAONEF01"
# magic, offset of the tarball from the start of the file, folder name (UTF-8, NUL-padded)
TRAILER = struct.Struct("<8sQ64s")
APP_NAME = "desktop-agent"
CACHE_ENV = "DESKTOP_AGENT_BUNDLE_CACHE"
_UNPACKING_PREFIX = ".unpacking-"


class PayloadError(Exception):
    """The file carries no app (it was cut short, or built without one)."""


def read_trailer(path: str) -> tuple[int, str] | None:
    """The tarball's offset and the cache folder's name, or None when ``path`` has none."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() < TRAILER.size:
            return None
        handle.seek(-TRAILER.size, os.SEEK_END)
        magic, offset, name = TRAILER.unpack(handle.read(TRAILER.size))
    if magic != MAGIC:
        return None
    return offset, name.rstrip(b"\0").decode("utf-8")


def append_payload(executable: str, folder: str, name: str, package: str) -> int:
    """Append ``folder`` (the app's onedir build) to ``executable`` as an xz tarball.

    A payload left by an earlier build of the same file is cut off first, so running
    the build twice does not stack two. Returns the payload's size in bytes.

    Args:
        executable: The launcher built by PyInstaller.
        folder: The onedir build; it is stored as ``desktop-agent/`` in the tarball.
        name: The cache folder's name for this build (version and digest), < 64 bytes.
        package: The launcher's PyInstaller archive (``EXE.pkgname``), copied after
            the tarball so that PyInstaller's bootloader finds it at the end.
    """
    import lzma
    import tarfile

    encoded = name.encode("utf-8")
    if len(encoded) > 64:
        raise ValueError(f"bundle name too long: {name!r}")
    earlier = read_trailer(executable)
    with open(executable, "r+b") as handle:
        if earlier is not None:
            handle.truncate(earlier[0])
        handle.seek(0, os.SEEK_END)
        offset = handle.tell()
        # preset 1: a third smaller than zlib; preset 6 would save ~10% more but takes
        # minutes per build on a 2-core machine, and unpacking runs once per build.
        with lzma.LZMAFile(handle, "wb", preset=1) as packed, \
                tarfile.open(fileobj=packed, mode="w|") as tar:
            tar.add(folder, arcname=APP_NAME)
        handle.seek(0, os.SEEK_END)
        size = handle.tell() - offset
        with open(package, "rb") as archive:
            for block in iter(lambda: archive.read(1 << 20), b""):
                handle.write(block)
        handle.write(TRAILER.pack(MAGIC, offset, encoded))
    return size


def cache_root() -> str:
    """The folder that holds one unpacked app per build."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return override
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "desktop-agent", "bundles")


class _Slice:
    """A read-only view of ``length`` bytes of a file from its current position."""

    def __init__(self, handle: object, length: int) -> None:
        self._handle = handle
        self._left = length

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > self._left:
            size = self._left
        data: bytes = self._handle.read(size)  # type: ignore[attr-defined]
        self._left -= len(data)
        return data


def unpack(executable: str, offset: int, folder: str) -> None:
    """Unpack the payload into ``folder``, all or nothing.

    It is unpacked beside ``folder`` and renamed into place, so a folder that exists is
    complete, and two first launches at once each finish (the second one's copy is
    dropped). Other builds' folders are removed afterwards, where nothing holds them.
    """
    import shutil
    import tarfile
    import tempfile

    root = os.path.dirname(folder)
    os.makedirs(root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=_UNPACKING_PREFIX, dir=root)
    try:
        with open(executable, "rb") as handle:
            end = handle.seek(-TRAILER.size, os.SEEK_END)
            handle.seek(offset)
            with tarfile.open(fileobj=_Slice(handle, end - offset), mode="r|xz") as tar:
                tar.extractall(scratch, filter="data")
        try:
            os.rename(os.path.join(scratch, APP_NAME), folder)
        except OSError:
            if not os.path.isdir(folder):
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for entry in os.listdir(root):
        path = os.path.join(root, entry)
        if path != folder and not entry.startswith(_UNPACKING_PREFIX):
            shutil.rmtree(path, ignore_errors=True)


def app_environment() -> dict[str, str]:
    """This process's environment without what PyInstaller's one-file start added.

    The one-file bootloader tells its Python child where its files are (``_PYI_*``)
    and puts them on the library path; the app's own bootloader must see neither.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("_PYI_")}
    for variable in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"):
        original = env.pop(f"{variable}_ORIG", None)
        if original is not None:
            env[variable] = original
        else:
            env.pop(variable, None)
    return env


def main(executable: str = sys.executable, args: list[str] | None = None) -> int:
    """Find (or unpack) this build's app and run it with our arguments.

    Args:
        executable: The file carrying the app: the one file itself when frozen.
        args: The app's arguments (default: this process's).
    """
    try:
        found = read_trailer(executable)
        if found is None:
            raise PayloadError(f"{executable} carries no app: download it again")
        offset, name = found
        folder = os.path.join(cache_root(), name)
        target = os.path.join(folder, APP_NAME + (".exe" if sys.platform == "win32" else ""))
        if not os.path.isfile(target):
            unpack(executable, offset, folder)
    except (OSError, PayloadError, EOFError, ValueError) as exc:
        sys.stderr.write(
            f"desktop-agent: could not unpack the app ({exc}).\n"
            f"Free some disk space, or set {CACHE_ENV} to a writable folder, and try again.\n"
        )
        return 1
    arguments = [target, *(sys.argv[1:] if args is None else args)]
    if sys.platform == "win32":  # no exec on Windows: run it and pass its status on
        import subprocess

        return subprocess.call(arguments, env=app_environment())
    os.execve(target, arguments, app_environment())
    return 1  # not reached: execve replaced this process


if __name__ == "__main__":
    sys.exit(main())
