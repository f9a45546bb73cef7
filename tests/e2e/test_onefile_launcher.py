"""The one file's launcher: unpack the app once per build into the cache, then run it from there.

The launcher (``packaging/onefile/launcher.py``) is run in a real subprocess on a
carrier file with a real xz payload appended, as ``build.spec`` appends the onedir
build; the "app" is a shell script that reports its arguments and environment.
On Linux the one file starts with the C stub (``packaging/onefile/stub.c``), compiled
here as ``build.spec`` compiles it, with a shell script standing in for the frozen
launcher that it runs on a first launch. ``test_binary.py`` runs the real one file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tier_policy import part_missing

REPO = Path(__file__).resolve().parents[2]
LAUNCHER_DIR = REPO / "packaging" / "onefile"
sys.path.insert(0, str(LAUNCHER_DIR))
import launcher  # noqa: E402

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(sys.platform == "win32", reason="the stand-in app is a shell script"),
]

APP_SCRIPT = """#!/bin/sh
echo "args: $*"
echo "pyi: ${_PYI_ARCHIVE_FILE:-unset}"
echo "library path: ${LD_LIBRARY_PATH:-unset}"
"""


def build(tmp_path: Path, name: str, version_text: str) -> Path:
    """A carrier file with an app folder appended, as build.spec makes the one file."""
    app = tmp_path / f"app-{name}"
    (app / "_internal").mkdir(parents=True)
    (app / "_internal" / "VERSION").write_text(version_text)
    (app / "desktop-agent").write_text(APP_SCRIPT)
    (app / "desktop-agent").chmod(0o755)
    carrier = tmp_path / f"one-file-{name}"
    carrier.write_bytes(b"\x7fELF stand-in for the launcher's own executable" * 100)
    package = tmp_path / "launcher.pkg"
    package.write_bytes(b"stand-in for the launcher's PyInstaller archive, cookie last")
    launcher.append_payload(str(carrier), str(app), name, str(package))
    return carrier


def launch(carrier: Path, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import launcher; "
            "sys.exit(launcher.main(sys.argv[2], sys.argv[3:]))")
    environment = {**os.environ, launcher.CACHE_ENV: str(cache), **env}
    return subprocess.run([sys.executable, "-c", code, str(LAUNCHER_DIR), str(carrier), *args],
                          env=environment, capture_output=True, text=True, timeout=120)


def test_first_launch_unpacks_later_launches_reuse_and_the_app_sees_a_clean_environment(
        tmp_path: Path) -> None:
    carrier = build(tmp_path, "0.1.0-aaaa", "one")
    cache = tmp_path / "cache"
    first = launch(carrier, cache, "--smoke-test", "x y",
                   _PYI_ARCHIVE_FILE="/tmp/_MEI123/x", LD_LIBRARY_PATH="/tmp/_MEI123",
                   LD_LIBRARY_PATH_ORIG="/opt/lib")
    assert first.returncode == 0, first.stderr
    assert "args: --smoke-test x y" in first.stdout
    # no display here: the first launch says on stderr what it is doing, once
    assert first.stderr.count("preparing version 0.1.0 for its first start") == 1
    assert "pyi: unset" in first.stdout  # the one-file bootloader's notes are not passed on
    assert "library path: /opt/lib" in first.stdout  # the user's own path is restored
    folder = cache / "0.1.0-aaaa"
    assert (folder / "_internal" / "VERSION").read_text() == "one"
    unpacked_at = folder.stat().st_ino, (folder / "desktop-agent").stat().st_mtime_ns

    again = launch(carrier, cache, "--help")
    assert again.returncode == 0 and "args: --help" in again.stdout
    assert (folder.stat().st_ino, (folder / "desktop-agent").stat().st_mtime_ns) == unpacked_at
    assert sorted(p.name for p in cache.iterdir()) == ["0.1.0-aaaa"]  # no scratch left


def test_a_new_build_unpacks_beside_and_removes_the_old_one(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert launch(build(tmp_path, "0.1.0-aaaa", "one"), cache).returncode == 0
    newer = build(tmp_path, "0.1.1-bbbb", "two")
    assert launch(newer, cache).returncode == 0
    assert sorted(p.name for p in cache.iterdir()) == ["0.1.1-bbbb"]
    assert (cache / "0.1.1-bbbb" / "_internal" / "VERSION").read_text() == "two"


def test_building_twice_replaces_the_payload_instead_of_stacking_it(tmp_path: Path) -> None:
    carrier = build(tmp_path, "0.1.0-aaaa", "one")
    size = carrier.stat().st_size
    launcher.append_payload(str(carrier), str(tmp_path / "app-0.1.0-aaaa"), "0.1.0-aaaa",
                            str(tmp_path / "launcher.pkg"))
    assert carrier.stat().st_size == size
    assert launch(carrier, tmp_path / "cache", "ok").stdout.startswith("args: ok")


def test_a_file_without_the_app_or_an_unwritable_cache_is_explained_without_a_traceback(
        tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.write_bytes(b"no payload here")
    result = launch(bare, tmp_path / "cache")
    assert result.returncode == 1
    assert "carries no app: download it again" in result.stderr
    assert "Traceback" not in result.stderr

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    result = launch(build(tmp_path, "0.1.0-aaaa", "one"), blocked)
    assert result.returncode == 1
    assert "could not unpack the app" in result.stderr
    assert launcher.CACHE_ENV in result.stderr and "Traceback" not in result.stderr


# -- the C stub (Linux): a later launch starts the unpacked app without any Python ------

STAND_IN_LAUNCHER = """#!/bin/sh
echo "launcher ran for $DESKTOP_AGENT_ONEFILE" >&2
exec {python} -c "import sys; sys.path.insert(0, sys.argv[1]); import launcher; \\
sys.exit(launcher.main())" {folder}
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not sys.platform.startswith("linux"):
        pytest.skip("the stub is for Linux (/proc/self/exe); elsewhere the launcher is first")
    compiled = launcher.compile_stub(str(tmp_path_factory.mktemp("stub") / "stub"))
    if compiled is None:
        part_missing("no C compiler to build packaging/onefile/stub.c (apt-get install gcc)")
    return Path(compiled)


def build_with_stub(tmp_path: Path, stub: Path, name: str, version_text: str) -> Path:
    """A one file as build.spec makes it on Linux: stub, launcher, tarball, trailer."""
    app = tmp_path / f"app-{name}"
    (app / "_internal").mkdir(parents=True)
    (app / "_internal" / "VERSION").write_text(version_text)
    (app / "desktop-agent").write_text(
        APP_SCRIPT + 'echo "onefile: ${DESKTOP_AGENT_ONEFILE:-unset}"\n'
        'echo "startup files: ${DESKTOP_AGENT_STARTUP_FILES:-unset}"\n')
    (app / "desktop-agent").chmod(0o755)
    one_file = tmp_path / f"one-file-{name}"
    one_file.write_text(STAND_IN_LAUNCHER.format(python=sys.executable, folder=LAUNCHER_DIR))
    launcher.append_payload(str(one_file), str(app), name, "unused", stub=str(stub))
    return one_file


def run_stub(one_file: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, launcher.CACHE_ENV: str(cache)}
    return subprocess.run([str(one_file), *args], env=environment, capture_output=True,
                          text=True, timeout=120)


def test_the_stub_unpacks_once_through_the_launcher_then_starts_the_app_directly(
        tmp_path: Path, stub: Path) -> None:
    one_file = build_with_stub(tmp_path, stub, "0.2.0-cccc", "stubbed")
    cache = tmp_path / "cache"
    first = run_stub(one_file, cache, "--smoke-test", "x y")
    assert first.returncode == 0, first.stderr
    assert f"launcher ran for {one_file}" in first.stderr  # the first launch unpacks
    assert "args: --smoke-test x y" in first.stdout
    assert "onefile: unset" in first.stdout  # the launcher's note is not passed on
    folder = cache / "0.2.0-cccc"
    assert (folder / "_internal" / "VERSION").read_text() == "stubbed"
    assert sorted(p.name for p in cache.iterdir()) == ["0.2.0-cccc"]  # no launcher copy left
    unpacked_at = folder.stat().st_ino, (folder / "desktop-agent").stat().st_mtime_ns

    again = run_stub(one_file, cache, "--help")
    assert again.returncode == 0 and "args: --help" in again.stdout
    assert "launcher ran" not in again.stderr  # the stub started the app by itself
    assert (folder.stat().st_ino, (folder / "desktop-agent").stat().st_mtime_ns) == unpacked_at

    newer = build_with_stub(tmp_path, stub, "0.2.1-dddd", "newer")
    assert run_stub(newer, cache).returncode == 0
    assert sorted(p.name for p in cache.iterdir()) == ["0.2.1-dddd"]


def test_the_stub_follows_the_launchers_cache_folder_and_rebuilding_replaces_the_payload(
        tmp_path: Path, stub: Path) -> None:
    one_file = build_with_stub(tmp_path, stub, "0.2.0-cccc", "stubbed")
    size = one_file.stat().st_size
    launcher.append_payload(str(one_file), str(tmp_path / "app-0.2.0-cccc"), "0.2.0-cccc",
                            "unused", stub=str(stub))
    assert one_file.stat().st_size == size
    environment = {key: value for key, value in os.environ.items()
                   if key not in (launcher.CACHE_ENV, "XDG_CACHE_HOME")}
    environment["HOME"] = str(tmp_path / "home")
    result = subprocess.run([str(one_file)], env=environment, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "home" / ".cache" / "desktop-agent" / "bundles" / "0.2.0-cccc"
            / "desktop-agent").is_file()


def test_the_stub_explains_a_missing_app_or_an_unwritable_cache_without_a_traceback(
        tmp_path: Path, stub: Path) -> None:
    bare = tmp_path / "bare"
    bare.write_bytes(stub.read_bytes())
    bare.chmod(0o755)
    result = run_stub(bare, tmp_path / "cache")
    assert result.returncode == 1
    assert "carries no app: download it again" in result.stderr

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    result = run_stub(build_with_stub(tmp_path, stub, "0.2.0-cccc", "x"), blocked / "sub")
    assert result.returncode == 1
    assert "could not unpack the app" in result.stderr
    assert launcher.CACHE_ENV in result.stderr and "Traceback" not in result.stderr


def test_version_is_answered_without_unpacking_the_app(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    result = launch(build(tmp_path, "0.3.0-eeee", "v"), cache, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "desktop-agent 0.3.0\n"
    assert not cache.exists()  # a new build's --version no longer unpacks 200 MB first


def test_a_damaged_payload_is_explained_and_leaves_no_half_app(tmp_path: Path) -> None:
    carrier = build(tmp_path, "0.1.0-aaaa", "one")
    found = launcher.read_trailer(str(carrier))
    assert found is not None
    data = bytearray(carrier.read_bytes())
    middle = (found.offset + found.end) // 2
    data[middle:middle + 64] = bytes(64)  # a download damaged in the middle of the app
    carrier.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    result = launch(carrier, cache)
    assert result.returncode == 1
    assert "damaged" in result.stderr and "download it again" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (cache / "0.1.0-aaaa").exists()
    assert list(cache.iterdir()) == []  # no scratch folder left behind


def test_the_stub_answers_version_without_unpacking(tmp_path: Path, stub: Path) -> None:
    cache = tmp_path / "cache"
    result = run_stub(build_with_stub(tmp_path, stub, "0.4.0-ffff", "v"), cache, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "desktop-agent 0.4.0\n"
    assert "launcher ran" not in result.stderr and not cache.exists()


# -- the stub reads ahead what the app's start read last time (gui/startup_files.py) --


def resident_pages(path: Path) -> list[bool]:
    """Which pages of ``path`` are in the page cache (mincore on a mapping of it)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = path.stat().st_size
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    with path.open("rb") as handle:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, handle.fileno(), 0)
        assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    try:
        vector = ctypes.create_string_buffer(pages)
        assert libc.mincore(address, size, vector) == 0, os.strerror(ctypes.get_errno())
        return [bool(byte & 1) for byte in vector.raw]
    finally:
        libc.munmap(address, size)


def evicted_file(path: Path, size: int) -> Path:
    """A file of ``size`` bytes on disk, none of it in the page cache."""
    path.write_bytes(os.urandom(size))
    with path.open("rb") as handle:
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return path


def test_the_stub_asks_the_app_for_its_start_files_then_reads_them_ahead_on_later_launches(
        tmp_path: Path, stub: Path) -> None:
    one_file = build_with_stub(tmp_path, stub, "0.6.0-acac", "read ahead")
    cache = tmp_path / "cache"
    listed = cache / "0.6.0-acac" / "startup-files"
    first = run_stub(one_file, cache)
    assert first.returncode == 0, first.stderr
    assert f"startup files: {listed}" in first.stdout  # none yet: the app is asked to write it

    # On disk, not in a temporary folder that may live in memory (tmpfs): the page cache
    # must be able to drop these files for the test to see them read again.
    scratch = REPO / "build" / f"read-ahead-test-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        library = evicted_file(scratch / "library.so", 64 * page)
        unlisted = evicted_file(scratch / "unlisted.pyc", 16 * page)
        module = evicted_file(scratch / "module.pyc", 8 * page)
        if any(resident_pages(library) + resident_pages(unlisted) + resident_pages(module)):
            part_missing(f"the page cache keeps the files of {scratch} (a memory filesystem?)")
        listed.write_text(
            f"{8 * page} {4 * page} {library}\n"
            f"{40 * page} {page} {library}\n"
            f"0 0 {module}\n"
            f"0 0 {scratch / 'gone.so'}\n"  # removed since: skipped
            "not a line of the list\n"
            f"0 0 relative/path.pyc\n")

        command = run_stub(one_file, cache, "serve")  # a command: neither asked nor read
        assert "args: serve" in command.stdout and "startup files: unset" in command.stdout
        again = run_stub(one_file, cache)
        assert again.returncode == 0, again.stderr
        assert "args: \n" in again.stdout
        assert "startup files: unset" in again.stdout  # written once per build, not again

        deadline = time.monotonic() + 120  # the read-ahead runs on after the app started
        while not (all(resident_pages(module))
                   and all(resident_pages(library)[n] for n in (8, 9, 10, 11, 40))):
            assert time.monotonic() < deadline, "the listed files were never read ahead"
            time.sleep(0.05)
        library_pages = resident_pages(library)
        assert not any(library_pages[:8]) and not any(library_pages[12:40])  # ranges, not files
        assert not any(resident_pages(unlisted))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def x_display() -> Iterator[str]:
    """A virtual X display (Xvfb), as a double-click on a desktop has a real one."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        part_missing("Xvfb is not installed (scripts/install-system-libraries.sh installs it)")
    number = next(n for n in range(120, 160) if not Path(f"/tmp/.X{n}-lock").exists())
    process = subprocess.Popen([xvfb, f":{number}", "-screen", "0", "1024x768x24",
                                "-nolisten", "tcp"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not Path(f"/tmp/.X11-unix/X{number}").exists():  # as long as a busy machine takes
            assert process.poll() is None, "Xvfb exited at start"
            time.sleep(0.05)
        yield f":{number}"
    finally:
        process.terminate()
        process.wait()


def test_a_first_launch_with_a_display_shows_a_window_while_it_unpacks(
        tmp_path: Path, x_display: str) -> None:
    try:
        import tkinter  # noqa: F401
    except ImportError:
        part_missing("this Python has no Tk (apt-get install python3-tk), which the "
                     "launcher's unpacking window uses")
    cache = tmp_path / "cache"
    result = launch(build(tmp_path, "0.5.0-abab", "w"), cache, "ok",
                    DISPLAY=x_display, DESKTOP_AGENT_REPORT_PAINT="1")
    assert result.returncode == 0, result.stderr
    assert "first-launch-window " in result.stderr  # the window was mapped and painted
    assert "args: ok" in result.stdout  # and the app started after it closed
    assert "Traceback" not in result.stderr
