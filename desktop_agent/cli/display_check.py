"""Can this process open a window? Answered before Qt is loaded.

Qt answers the same question by aborting: with no display it prints "could not
connect to display" and dies with SIGABRT (exit code 134); with a display but without
the xcb libraries its platform plugin needs, it blames ``xcb-cursor0`` whatever is
missing. Both reach a person as a crash. Checking first lets the command line say in
one sentence what is wrong and what to run instead, and exit with a status.

Only the standard library is used, so the check costs nothing at start-up.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping, Sequence

#: The shared libraries (by soname) Qt's xcb platform plugin loads, with the Debian
#: package of each.
XCB_LIBRARIES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
}

NO_DISPLAY = (
    "no display found; run `desktop-agent serve` for the REST API, "
    "or set QT_QPA_PLATFORM=offscreen"
)
INSTALL_LIBRARIES = "bash scripts/install-system-libraries.sh"


def window_problem(
    qt_args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> str | None:
    """Why a window cannot open here, as one sentence, or None when it can.

    Args:
        qt_args: Arguments meant for Qt; ``-platform`` there overrides the check.
        environ: The environment to judge (the process's own by default).
        platform: ``sys.platform`` by default; only Linux and the BSDs need a display
            server, macOS and Windows always have one.
    """
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not (platform.startswith("linux") or "bsd" in platform):
        return None
    if env.get("QT_QPA_PLATFORM") or "-platform" in qt_args:
        return None  # the person chose a platform plugin; Qt reports its own problems
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        return NO_DISPLAY
    if env.get("WAYLAND_DISPLAY"):
        return None  # Qt prefers Wayland then and needs none of the xcb libraries
    missing = missing_xcb_packages()
    if missing:
        return (
            f"the window needs system libraries that are missing ({', '.join(missing)}); "
            f"install them with `{INSTALL_LIBRARIES}`"
        )
    if not x_server_answers():
        display = env.get("DISPLAY", "")
        return (
            f"cannot connect to the display {display} (is the X server running?); run "
            "`desktop-agent serve` for the REST API, or set QT_QPA_PLATFORM=offscreen"
        )
    return None


def x_server_answers() -> bool:
    """Whether the X server named by ``DISPLAY`` accepts a connection (libxcb, as Qt does)."""
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return True  # no libxcb to ask with; leave the verdict to Qt
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(None, None)
    try:
        return bool(connection) and xcb.xcb_connection_has_error(connection) == 0
    finally:
        if connection:
            xcb.xcb_disconnect(connection)


def missing_xcb_packages() -> list[str]:
    """The Debian packages of the xcb libraries the dynamic linker cannot load."""
    missing = []
    for soname, package in XCB_LIBRARIES.items():
        try:
            ctypes.CDLL(soname)  # Qt loads them anyway; loading one early costs nothing
        except OSError:
            missing.append(package)
    return missing
