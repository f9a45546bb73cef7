"""A working folder's exact state, to prove a preview or a discard left it byte for byte."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def snapshot(folder: Path) -> dict[str, tuple[int, str, int]]:
    """Every path under ``folder``: its mode, a digest of its bytes (or link text), its mtime."""
    found: dict[str, tuple[int, str, int]] = {}
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                digest = "link:" + os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            else:
                digest = ""
            found[os.path.relpath(path, folder)] = (info.st_mode, digest, info.st_mtime_ns)
    return found
