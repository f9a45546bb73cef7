"""File contents stored once, named by their SHA-256: the checkpoints' object files.

Why our own object files and not a git object store (dulwich, pygit2): a
checkpoint needs only "contents by digest" plus our own manifest (which
keeps what git's tree objects cannot: the inode and mtime that let an
unchanged file skip hashing, and files left out by a cap). dulwich would add
zlib and a loose-object header to every write (a first checkpoint of a
200 MB folder spends its time compressing), pygit2 a compiled dependency for
the frozen binary, and neither is needed to read the objects back: each is
the file's bytes, written once, never changed. Contents are not compressed
for the same reason: speed of the first checkpoint and of an undo matters
more than the data folder's size, which pruning bounds.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

_READ_CHUNK = 1 << 20


class ObjectStore:
    """Contents by digest under ``root`` (``ab/cdef...``), private to the user.

    Args:
        root: The folder of object files (created on first write).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: set[str] = set()

    def path_of(self, digest: str) -> Path:
        """The object file of ``digest`` (it may not exist)."""
        return self.root / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        """Whether the contents of ``digest`` are stored."""
        if digest in self._known:
            return True
        if self.path_of(digest).exists():
            self._known.add(digest)
            return True
        return False

    def put_file(self, path: str) -> str:
        """Store the contents of the regular file at ``path``; return their digest.

        The file is opened without following a symlink (``O_NOFOLLOW``) and
        read once: hashed as it is read, written only when its digest is new.

        Raises:
            OSError: It cannot be read (gone, no permission, replaced by a link).
        """
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as source:
            data = source.read()
        digest = hashlib.sha256(data).hexdigest()
        if not self.has(digest):
            self._write(digest, data)
        return digest

    def read(self, digest: str) -> bytes:
        """The stored contents of ``digest``.

        Raises:
            FileNotFoundError: They are not stored (pruned, or the folder was wiped).
        """
        return self.path_of(digest).read_bytes()

    def _write(self, digest: str, data: bytes) -> None:
        target = self.path_of(digest)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        self._known.add(digest)

    def remove_unused(self, used: set[str]) -> int:
        """Delete every object not in ``used``; return the bytes freed."""
        freed = 0
        if not self.root.is_dir():
            return 0
        for bucket in self.root.iterdir():
            if not bucket.is_dir():
                continue
            for item in bucket.iterdir():
                if bucket.name + item.name in used:
                    continue
                with contextlib.suppress(OSError):
                    freed += item.stat().st_size
                    item.unlink()
                    self._known.discard(bucket.name + item.name)
        return freed
