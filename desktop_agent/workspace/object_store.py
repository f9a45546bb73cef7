"""File contents stored once, named by their SHA-256, in pack files: the checkpoints' objects.

Why our own files and not a git object store (dulwich, pygit2): a checkpoint
needs only "contents by digest" plus our own manifest (which keeps what git's
tree objects cannot: the inode and mtime that let an unchanged file skip
hashing, and files left out by a cap). dulwich would zlib-compress every
object (a first checkpoint of a 200 MB folder would spend its time
compressing) and write one loose file per object; pygit2 adds a compiled
dependency to the frozen binary. Neither is needed to read the objects back.

Why packs: creating a file is the slow part of storing many small ones (on a
busy disk, milliseconds each: a first checkpoint of 10,000 files as loose
objects took tens of seconds). New contents are appended to one pack per
checkpoint (``<id>.pack``, the bytes one after another, never compressed:
speed of a checkpoint and of an undo matters more than the data folder's
size, which pruning bounds) with an index beside it (``<id>.idx``: digest ->
offset and length), written once, never changed; pruning writes the
still-used contents to a new pack and deletes the old ones.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

FLUSH_BYTES = 64 * 1024 * 1024
"""New contents held in memory before they are written out as a pack."""


class ObjectStore:
    """Contents by digest under ``root``, private to the user.

    Contents added with :meth:`put_file` are held until :meth:`flush` (or
    until :data:`FLUSH_BYTES` are held), so a caller flushes before it
    records anything that names them.

    Args:
        root: The folder of packs (created on first write).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._where: dict[str, tuple[str, int, int]] = {}  # digest -> (pack, offset, size)
        self._packs_seen: set[str] = set()
        self._loaded = False
        self._pending: dict[str, bytes] = {}
        self._pending_bytes = 0
        self._dropped: set[str] | None = None
        self._dropped_key: tuple[int, int] | None = None

    @property
    def dropped(self) -> set[str]:
        """Digests of contents dropped because they held a secret (see :meth:`remove_matching`).

        Kept in ``dropped.json`` beside the packs (digests of whole files, as
        manifests keep them; never the contents), so a scan in any process
        knows not to reuse an entry whose content is gone.
        """
        path = self.root / "dropped.json"
        try:
            st = path.stat()
            key: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        if self._dropped is None or key != self._dropped_key:
            try:
                self._dropped = set(json.loads(path.read_bytes())) if key else set()
            except (OSError, ValueError, TypeError):
                self._dropped = set()
            self._dropped_key = key
        return self._dropped

    # -- the index ----------------------------------------------------------------------
    def _load(self, again: bool = False) -> None:
        if self._loaded and not again:
            return
        self._loaded = True
        if not self.root.is_dir():
            return
        for index in self.root.glob("*.idx"):
            if index.stem in self._packs_seen:
                continue
            try:
                entries = json.loads(index.read_bytes())
            except (OSError, ValueError):
                continue  # a pack being written or pruned by another process
            self._packs_seen.add(index.stem)
            for digest, (offset, size) in entries.items():
                self._where.setdefault(digest, (index.stem, offset, size))

    def has(self, digest: str) -> bool:
        """Whether the contents of ``digest`` are stored (or held to be)."""
        self._load()
        return digest in self._where or digest in self._pending

    # -- writing ------------------------------------------------------------------------
    def put_file(self, path: str, *, dir_fd: int | None = None,
                 refuse: Callable[[bytes], bool] | None = None) -> str | None:
        """Store the contents of the regular file at ``path``; return their digest.

        The file is opened without following a symlink (``O_NOFOLLOW``) nor
        blocking (a FIFO swapped in for it would wait for a writer forever)
        and read once: hashed as it is read, kept only when its digest is new.

        Args:
            path: The file; relative to ``dir_fd`` when given (a folder walked
                by descriptors, so no link on the way is followed either).
            dir_fd: A descriptor of the folder holding it.
            refuse: Says which contents must not be kept (those holding a
                secret): then nothing is stored and None is returned. The store
                itself learns nothing of what it refuses.

        Raises:
            OSError: It cannot be read (gone, no permission, replaced by a
                link or by anything but a regular file).
        """
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                     | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as source:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            data = source.read()
        if refuse is not None and refuse(data):
            return None
        digest = hashlib.sha256(data).hexdigest()
        if not self.has(digest):
            self._pending[digest] = data
            self._pending_bytes += len(data)
            if self._pending_bytes >= FLUSH_BYTES:
                self.flush()
        return digest

    def flush(self) -> None:
        """Write the contents held so far as one pack (nothing to do when none are)."""
        if not self._pending:
            return
        self._write_pack(self._pending)
        self._pending = {}
        self._pending_bytes = 0

    def _write_pack(self, contents: dict[str, bytes]) -> str:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        index: dict[str, tuple[int, int]] = {}
        offset = 0
        for digest, data in contents.items():
            index[digest] = (offset, len(data))
            offset += len(data)
        pack = self.root / f"{name}.pack"
        _write_new(pack, b"".join(contents.values()))
        # The index last: a pack without one is not read (and pruning removes it).
        _write_new(self.root / f"{name}.idx", json.dumps(index).encode())
        self._packs_seen.add(name)
        for digest, (start, size) in index.items():
            self._where[digest] = (name, start, size)
        return name

    # -- reading ------------------------------------------------------------------------
    def read(self, digest: str) -> bytes:
        """The stored contents of ``digest``.

        Raises:
            FileNotFoundError: They are not stored (pruned, or the folder was wiped).
        """
        held = self._pending.get(digest)
        if held is not None:
            return held
        self._load()
        if digest not in self._where:
            self._load(again=True)  # another process may have written it
        found = self._where.get(digest)
        if found is None:
            raise FileNotFoundError(f"no stored contents {digest}")
        pack, offset, size = found
        try:
            with open(self.root / f"{pack}.pack", "rb") as source:
                source.seek(offset)
                data = source.read(size)
        except FileNotFoundError:
            # Another process repacked (pruning, or dropping contents that held a
            # secret): read the packs' indexes afresh and look once more.
            self._where.clear()
            self._packs_seen.clear()
            self._load(again=True)
            if self._where.get(digest, (pack,))[0] == pack:
                raise
            return self.read(digest)
        if len(data) != size:
            raise FileNotFoundError(f"the pack holding {digest} is damaged")
        return data

    def read_many(self, digests: list[str]) -> dict[str, bytes]:
        """Several contents at once, each pack opened once (for an undo of many files).

        Contents no longer stored (dropped, see :meth:`remove_matching`) are
        left out of the answer: the caller leaves those files as they are.
        """
        self._load()
        out: dict[str, bytes] = {}
        by_pack: dict[str, list[tuple[int, int, str]]] = {}
        for digest in digests:
            if digest in self._pending:
                out[digest] = self._pending[digest]
            elif digest in self._where:
                pack, offset, size = self._where[digest]
                by_pack.setdefault(pack, []).append((offset, size, digest))
            else:
                with contextlib.suppress(FileNotFoundError):
                    out[digest] = self.read(digest)
        for pack, wanted in by_pack.items():
            try:
                with open(self.root / f"{pack}.pack", "rb") as source:
                    for offset, size, digest in sorted(wanted):
                        source.seek(offset)
                        out[digest] = source.read(size)
            except FileNotFoundError:  # repacked by another process meanwhile
                for _offset, _size, digest in wanted:
                    with contextlib.suppress(FileNotFoundError):
                        out[digest] = self.read(digest)
        return out

    # -- pruning ------------------------------------------------------------------------
    def remove_unused(self, used: set[str]) -> int:
        """Keep only ``used`` contents: repack what packs still hold of them; return bytes freed.

        A pack whose contents are all used stays as it is; the others are
        read, their used contents written to one new pack, and deleted.
        """
        self.flush()
        self._load(again=True)
        if not self.root.is_dir():
            return 0
        packs: dict[str, list[str]] = {}
        for digest, (pack, _offset, _size) in self._where.items():
            packs.setdefault(pack, []).append(digest)
        keep: dict[str, bytes] = {}
        doomed: list[str] = []
        for pack, digests in packs.items():
            if all(d in used for d in digests):
                continue
            doomed.append(pack)
            still = [d for d in digests if d in used]
            keep.update(self.read_many(still))
        before = self._bytes()
        if keep:
            self._write_pack(keep)
        for pack in doomed:
            for suffix in (".idx", ".pack"):
                with contextlib.suppress(OSError):
                    (self.root / f"{pack}{suffix}").unlink()
            self._packs_seen.discard(pack)
        self._where = {d: w for d, w in self._where.items()
                       if w[0] not in doomed and d in used}
        for orphan in self.root.glob("*.pack"):  # a pack whose index never got written
            if not orphan.with_suffix(".idx").exists():
                with contextlib.suppress(OSError):
                    orphan.unlink()
        return max(0, before - self._bytes())

    def remove_matching(self, matches: Callable[[bytes], bool]) -> set[str]:
        """Drop every stored content ``matches`` accepts (one holding a secret); their digests.

        Each pack is read once; a pack holding such a content is rewritten
        without it. Nothing else changes: manifests still name the digests,
        and readers treat a content that is gone as one not kept.
        """
        self.flush()
        self._load(again=True)
        packs: dict[str, list[str]] = {}
        for digest, (pack, _offset, _size) in self._where.items():
            packs.setdefault(pack, []).append(digest)
        dropped: set[str] = set()
        for digests in packs.values():
            contents = self.read_many(digests)
            dropped.update(d for d, data in contents.items() if matches(data))
        if dropped:
            self.remove_unused({d for d in self._where if d not in dropped})
            self._dropped = self.dropped | dropped
            _write_new(self.root / "dropped.json", json.dumps(sorted(self._dropped)).encode())
        return dropped

    def _bytes(self) -> int:
        total = 0
        for item in self.root.iterdir():
            with contextlib.suppress(OSError):
                total += item.stat().st_size
        return total


def _write_new(target: Path, data: bytes) -> None:
    """Write a whole file under a temporary name, then rename it into place."""
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
