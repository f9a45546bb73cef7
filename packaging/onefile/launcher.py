"""The one ``desktop-agent`` file: unpack the app once per build, then start it from there.

PyInstaller's one-file mode unpacks every library of the app (about 160 MB) into a
new temporary folder on every launch and deletes it on exit: most of the one file's
start-up time (1.22 s to first paint against 0.78 s from source). So the one file
people download carries the app's onedir build as a zstd-compressed tarball, which its
first launch of a build unpacks into the user's cache folder
(``~/.cache/desktop-agent/bundles/<version>-<digest>``, ``%LOCALAPPDATA%`` on Windows,
``~/Library/Caches`` on macOS; ``DESKTOP_AGENT_BUNDLE_CACHE`` overrides it); every later
launch finds that folder and replaces itself with the app there (``exec``), which
starts like the onedir build. A new build has a new digest, so it unpacks next to the
old one and the old folders are removed.

The first launch is the one a person waits through: zstd, not xz, because it unpacks
the ~200 MB app about ten times faster for the same file size (xz at its fastest
preset took 7 s of CPU to decode; zstd at level 12 under 1 s, see docs/performance.md),
and while it unpacks a small window with a progress bar shows what is happening (Tk,
which the launcher carries for this; a line on stderr where there is no display), so a
double-click never looks like nothing happened. ``--version`` never unpacks: the stub
answers it from the trailer.

This script is the launcher that unpacks; ``build.spec`` freezes it as a minimal
PyInstaller one-file program (Python and this script). The file has one of two layouts,
told apart by the trailer's magic:

* ``DAONEF02`` (Linux, built with a C compiler): ``stub.c`` compiled, then this launcher,
  then the tarball, then a trailer saying where each starts. The stub finds an unpacked
  app and starts it (``exec``) without starting Python at all (the frozen launcher costs about
  0.13 s of CPU and 7 MB read per launch: PyInstaller's bootloader unpacks libpython to a
  temporary folder first); only a first launch copies this launcher out and runs it with
  ``DESKTOP_AGENT_ONEFILE`` naming the one file, to unpack and exit.
* ``DAONEF01`` (elsewhere): this launcher, then the tarball, then a second copy of the
  launcher's own PyInstaller archive, then the trailer. (PyInstaller's bootloader looks
  for its archive by scanning back from the end of the file: behind 70 MB of tarball
  that scan cost about a second on every launch; with its archive last again, it finds
  it at once.)

``build.spec`` imports :func:`append_payload` to write either layout, so the format is
defined once, here (and read by ``stub.c``). The launcher's own start imports only
``os``, ``struct`` and ``sys``; the unpacking modules load on a first launch only.
"""

from __future__ import annotations

import os
import struct
import sys

MAGIC = b"DAONEF01"
# magic, offset of the tarball from the start of the file, folder name (UTF-8, NUL-padded)
TRAILER = struct.Struct("<8sQ64s")
STUB_MAGIC = b"DAONEF02"
# magic, the launcher's offset and size, the tarball's offset, folder name (as stub.c reads)
STUB_TRAILER = struct.Struct("<8sQQQ64s")
APP_NAME = "desktop-agent"
CACHE_ENV = "DESKTOP_AGENT_BUNDLE_CACHE"
#: Set by stub.c for the launcher it runs: the one file to unpack (then exit, not exec).
ONEFILE_ENV = "DESKTOP_AGENT_ONEFILE"
_UNPACKING_PREFIX = ".unpacking-"
ZSTD_LEVEL = 12
#: 2**27 bytes: zstd's default limit for decoders, so the unpacking needs no option.
ZSTD_WINDOW_LOG = 27


class PayloadError(Exception):
    """The file carries no app (it was cut short, or built without one)."""


class Trailer:
    """Where the parts of a one file are (``launcher_size`` is 0 without a stub).

    A plain class, not a NamedTuple: the launcher's start imports no ``typing``.
    """

    __slots__ = ("end", "launcher_offset", "launcher_size", "name", "offset")

    def __init__(self, offset: int, end: int, name: str, launcher_offset: int = 0,
                 launcher_size: int = 0) -> None:
        self.offset = offset  # the tarball's
        self.end = end  # where the tarball ends (the file's size less what follows it)
        self.name = name  # the cache folder's name
        self.launcher_offset = launcher_offset
        self.launcher_size = launcher_size


def read_trailer(path: str) -> Trailer | None:
    """Where the tarball is and the cache folder's name, or None when ``path`` has none."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size >= STUB_TRAILER.size:
            handle.seek(-STUB_TRAILER.size, os.SEEK_END)
            magic, launcher_offset, launcher_size, offset, name = STUB_TRAILER.unpack(
                handle.read(STUB_TRAILER.size))
            if magic == STUB_MAGIC:
                return Trailer(offset, size - STUB_TRAILER.size,
                               name.rstrip(b"\0").decode("utf-8"), launcher_offset,
                               launcher_size)
        if size < TRAILER.size:
            return None
        handle.seek(-TRAILER.size, os.SEEK_END)
        magic, offset, name = TRAILER.unpack(handle.read(TRAILER.size))
    if magic != MAGIC:
        return None
    return Trailer(offset, size - TRAILER.size, name.rstrip(b"\0").decode("utf-8"))


def append_payload(executable: str, folder: str, name: str, package: str,
                   stub: str | None = None) -> int:
    """Make ``executable`` the one file: the launcher with ``folder`` appended (zstd).

    A payload left by an earlier build of the same file is cut off first, so running
    the build twice does not stack two. Returns the payload's size in bytes.

    Args:
        executable: The launcher built by PyInstaller; it is replaced by the one file.
        folder: The onedir build; it is stored as ``desktop-agent/`` in the tarball.
        name: The cache folder's name for this build (version and digest), < 64 bytes.
        package: The launcher's PyInstaller archive (``EXE.pkgname``), copied after
            the tarball so that PyInstaller's bootloader finds it at the end (``DAONEF01``).
        stub: ``stub.c`` compiled: put it first and the launcher after it (``DAONEF02``).
    """
    import tarfile

    import zstandard

    encoded = name.encode("utf-8")
    if len(encoded) > 64:
        raise ValueError(f"bundle name too long: {name!r}")
    earlier = read_trailer(executable)
    with open(executable, "rb") as handle:
        if earlier is None:
            launcher = handle.read()
        elif earlier.launcher_size:
            handle.seek(earlier.launcher_offset)
            launcher = handle.read(earlier.launcher_size)
        else:
            launcher = handle.read(earlier.offset)
    scratch = executable + ".part"
    with open(scratch, "wb") as handle:
        if stub is not None:
            with open(stub, "rb") as compiled:
                handle.write(compiled.read())
        launcher_offset = handle.tell()
        handle.write(launcher)
        offset = handle.tell()
        # Level 12 with long-distance matching over a 128 MB window (the same libraries
        # recur across Qt's plugins) makes a file about as small as xz's fastest preset
        # did, in 20 s of CPU; level 19 saves 5 MB more for 150 s per build.
        params = zstandard.ZstdCompressionParameters.from_level(
            ZSTD_LEVEL, threads=-1, enable_ldm=True, window_log=ZSTD_WINDOW_LOG,
            write_checksum=True)  # a damaged download is told, not unpacked
        compressor = zstandard.ZstdCompressor(compression_params=params)
        with compressor.stream_writer(handle, closefd=False) as packed, \
                tarfile.open(fileobj=packed, mode="w|") as tar:
            tar.add(folder, arcname=APP_NAME)
        handle.seek(0, os.SEEK_END)
        size = handle.tell() - offset
        if stub is not None:
            handle.write(STUB_TRAILER.pack(STUB_MAGIC, launcher_offset, len(launcher), offset,
                                           encoded))
        else:
            with open(package, "rb") as archive:
                for block in iter(lambda: archive.read(1 << 20), b""):
                    handle.write(block)
            handle.write(TRAILER.pack(MAGIC, offset, encoded))
    os.chmod(scratch, 0o755)
    os.replace(scratch, executable)
    return size


def compile_stub(output: str) -> str | None:
    """Compile ``stub.c`` (beside this file) into ``output``; None where it cannot be.

    The stub is Linux-only (it finds itself through ``/proc/self/exe``) and needs a C
    compiler at build time; without one the build writes the ``DAONEF01`` layout, which
    starts slower but works the same. Why it could not is written to stderr.
    """
    import shutil
    import subprocess

    if not sys.platform.startswith("linux"):
        return None
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        sys.stderr.write("launcher: no C compiler (cc); the one file starts its launcher "
                         "in Python on every launch\n")
        return None
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stub.c")
    done = subprocess.run([compiler, "-Os", "-s", "-Wall", "-o", output, source],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(f"launcher: {compiler} could not compile {source}:\n{done.stderr}")
        return None
    return output


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
    """A read-only view of ``length`` bytes of a file from its current position.

    ``progress`` is told the share read so far (0..1) after every read.
    """

    def __init__(self, handle: object, length: int, progress: object = None) -> None:
        self._handle = handle
        self._length = max(length, 1)
        self._left = length
        self._progress = progress

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > self._left:
            size = self._left
        data: bytes = self._handle.read(size)  # type: ignore[attr-defined]
        self._left -= len(data)
        if self._progress is not None:
            self._progress(1 - self._left / self._length)  # type: ignore[operator]
        return data


class _Notice:
    """What a person sees while a first launch unpacks: a small window, else a line.

    Unpacking takes seconds (minutes on a loaded machine) before the app can show
    anything, and a double-clicked file that shows nothing looks broken. Tk is the one
    toolkit the launcher can carry without the app's Qt, which is still packed. Where
    there is no display, or no Tk in this build, stderr says what is happening.
    """

    def __init__(self, version: str) -> None:
        self._window: object = None
        self._bar: object = None
        self._tk_error: type[Exception] = Exception
        self._shown_at = 0.0
        sys.stderr.write(f"desktop-agent: preparing version {version} for its first start "
                         "(once per version)...\n")
        sys.stderr.flush()
        if sys.platform.startswith("linux") and not (
                os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return
        try:
            self._open(version)
        except ImportError:  # no Tk in this build: the line it is
            self._window = None
        except self._tk_error:  # no display Tk can use: the line it is
            self._window = None

    def _open(self, version: str) -> None:
        import time
        import tkinter
        from tkinter import ttk

        self._tk_error = tkinter.TclError
        window = tkinter.Tk(className="desktop-agent")
        window.title("Desktop Agent")
        window.resizable(False, False)
        frame = ttk.Frame(window, padding=18)
        frame.pack(fill="both", expand=True)
        ttk.Label(frame, text=f"Preparing Desktop Agent {version}",
                  font=("TkDefaultFont", 11, "bold")).pack(anchor="w")
        ttk.Label(frame, text="The first start of a new version unpacks the app; later "
                              "starts skip this.").pack(anchor="w", pady=(4, 10))
        bar = ttk.Progressbar(frame, length=360, maximum=1000, mode="determinate")
        bar.pack(fill="x")
        window.update_idletasks()
        x = (window.winfo_screenwidth() - window.winfo_reqwidth()) // 2
        y = (window.winfo_screenheight() - window.winfo_reqheight()) // 3
        window.geometry(f"+{x}+{y}")
        window.update()
        self._window, self._bar, self._shown_at = window, bar, time.monotonic()
        if os.environ.get("DESKTOP_AGENT_REPORT_PAINT"):  # bench/startup.py reads it
            sys.stderr.write(f"first-launch-window {time.time():.3f}\n")
            sys.stderr.flush()

    def progress(self, share: float) -> None:
        """Move the bar (at most every 50 ms: each update repaints the window)."""
        if self._window is None:
            return
        import time

        now = time.monotonic()
        if now - self._shown_at < 0.05 and share < 1:
            return
        self._shown_at = now
        try:
            self._bar["value"] = int(share * 1000)  # type: ignore[index]
            self._window.update()  # type: ignore[attr-defined]
        except self._tk_error:  # the person closed the window: keep unpacking without it
            self._window = None

    def close(self) -> None:
        window, self._window = self._window, None
        if window is not None:
            try:
                window.destroy()  # type: ignore[attr-defined]
            except self._tk_error:  # the person closed it already
                return


def unpack(executable: str, found: Trailer, folder: str) -> None:
    """Unpack the payload into ``folder``, all or nothing.

    It is unpacked beside ``folder`` and renamed into place, so a folder that exists is
    complete, and two first launches at once each finish (the second one's copy is
    dropped). Other builds' folders are removed afterwards, where nothing holds them.
    """
    import shutil
    import tarfile
    import tempfile

    import zstandard

    root = os.path.dirname(folder)
    os.makedirs(root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=_UNPACKING_PREFIX, dir=root)
    notice = _Notice(found.name.split("-", 1)[0])
    try:
        with open(executable, "rb") as handle:
            handle.seek(found.offset)
            packed = _Slice(handle, found.end - found.offset, notice.progress)
            decoder = zstandard.ZstdDecompressor(max_window_size=1 << ZSTD_WINDOW_LOG)
            # a file-like object is all stream_reader reads (its stubs name only IO)
            reader = decoder.stream_reader(packed)  # type: ignore[arg-type]
            with reader as unpacked, tarfile.open(fileobj=unpacked, mode="r|") as tar:
                tar.extractall(scratch, filter="data")
        try:
            os.rename(os.path.join(scratch, APP_NAME), folder)
        except OSError:
            if not os.path.isdir(folder):
                raise
    except (zstandard.ZstdError, tarfile.TarError) as exc:
        raise PayloadError(f"the app inside the file is damaged ({exc}): download it "
                           "again") from None
    finally:
        notice.close()
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

    Run by ``stub.c`` (``DESKTOP_AGENT_ONEFILE`` set), it only unpacks that file and
    exits: the stub starts the app.

    Args:
        executable: The file carrying the app: the one file itself when frozen.
        args: The app's arguments (default: this process's).
    """
    for_stub = os.environ.get(ONEFILE_ENV)
    if for_stub:
        executable = for_stub
    arguments = sys.argv[1:] if args is None else args
    try:
        found = read_trailer(executable)
        if found is None:
            raise PayloadError(f"{executable} carries no app: download it again")
        if arguments == ["--version"] and not for_stub:  # as the stub: no unpacking for it
            sys.stdout.write(f"{APP_NAME} {found.name.split('-', 1)[0]}\n")
            return 0
        folder = os.path.join(cache_root(), found.name)
        target = os.path.join(folder, APP_NAME + (".exe" if sys.platform == "win32" else ""))
        if not os.path.isfile(target):
            unpack(executable, found, folder)
    except (OSError, PayloadError, EOFError, ValueError) as exc:
        sys.stderr.write(
            f"desktop-agent: could not unpack the app ({exc}).\n"
            f"Free some disk space, or set {CACHE_ENV} to a writable folder, and try again.\n"
        )
        return 1
    if for_stub:
        return 0
    command = [target, *arguments]
    if sys.platform == "win32":  # no exec on Windows: run it and pass its status on
        import subprocess

        return subprocess.call(command, env=app_environment())
    os.execve(target, command, app_environment())
    return 1  # not reached: execve replaced this process


if __name__ == "__main__":
    sys.exit(main())
