"""The window's and ``serve``'s threads all allocate from glibc's main arena.

In a fresh interpreter (a thread keeps the arena it first got): four threads
each allocate while the others do. By default glibc gives threads arenas of
their own (``malloc_info`` lists one heap each), where what a thread frees stays
for that thread: the warm-up's worker kept ~10 MB free that way in the window
soak. After the window's ``prepare_imports``, or ``serve``'s start, there is one arena.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, json, os, sys, tempfile, threading
if sys.argv[1] == "window":
    from desktop_agent.gui.app import prepare_imports
    prepare_imports()
elif sys.argv[1] == "serve":  # serve's own start, refused at once (a bad port)
    import argparse
    from desktop_agent.server.cli_command import run_serve
    refused = run_serve(argparse.Namespace(host="127.0.0.1", no_auth=True, idle_seconds=60,
                                           port=0))
    assert refused != 0

started = threading.Barrier(4)
held = []

def allocate():
    started.wait()  # all four at once: each finds the arenas busy
    held.append([bytes(2000) for _ in range(2000)])

threads = [threading.Thread(target=allocate) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = [ctypes.c_void_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "info.xml")
    stream = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    with open(path) as info:
        heaps = info.read().count("<heap nr=")
print(json.dumps({"arenas": heaps}))
"""


def _arenas_after_four_threads(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True,
                          text=True, timeout=300, check=True)
    return int(json.loads(done.stdout.strip().splitlines()[-1])["arenas"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_threads_share_the_main_arena_in_the_window() -> None:
    assert _arenas_after_four_threads("plain") > 1  # the probe sees glibc's own arenas
    assert _arenas_after_four_threads("window") == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_threads_share_the_main_arena_in_serve() -> None:
    assert _arenas_after_four_threads("serve") == 1
