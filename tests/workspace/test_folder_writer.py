"""FolderWriter against links planted in every position: nothing outside the folder changes.

A link to a folder outside the working folder is put where a path's folder
belongs (a child of the root, a middle folder) or at the path itself, and
every kind of write, removal and mode change is made through that path. The
outside folder must end as it began; writes replace the link by a real
folder (or take its name), everything else finds the path absent.

Links to ``/etc`` are used only where a broken writer could at worst create
a uniquely named file there (removed after the test): a writer bug must not
be able to damage the machine the tests run on. Everything else uses an
outside folder of the test's own, which is the same case to the writer.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from desktop_agent.workspace.folder_writer import FolderWriter

Snapshot = dict[str, tuple[int, int, bytes]]


def snapshot(folder: Path) -> Snapshot:
    """Every path under ``folder``: mode, mtime and bytes (a link: its text), links not followed."""
    found: Snapshot = {}
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            full = Path(parent, name)
            st = full.lstat()
            body = (os.readlink(full).encode() if stat.S_ISLNK(st.st_mode)
                    else full.read_bytes() if stat.S_ISREG(st.st_mode) else b"")
            found[full.relative_to(folder).as_posix()] = (st.st_mode, st.st_mtime_ns, body)
    return found


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    (folder / "a").mkdir(parents=True)
    (folder / "source.txt").write_text("source\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A folder beside the working folder holding every name the tests write; checked after."""
    folder = tmp_path / "outside"
    (folder / "b").mkdir(parents=True)
    for rel in ("x", "b/x", "source.txt"):
        (folder / rel).write_text(f"outside {rel}\n")
        (folder / rel).chmod(0o644)
    before = snapshot(folder)
    yield folder
    assert snapshot(folder) == before, "a write went outside the working folder"


@pytest.fixture
def writer(work: Path) -> Iterator[FolderWriter]:
    with FolderWriter(work) as opened:
        yield opened


# Where the planted link is (a folder of the written path), and the path written.
THROUGH_A_LINKED_FOLDER = {
    "a child of the root": ("sub", "sub/x"),
    "a middle folder": ("a/sub", "a/sub/x"),
    "a middle folder, deeper still": ("a/sub", "a/sub/b/x"),
}

Write = Callable[[FolderWriter, str], None]
Check = Callable[[Path], bool]
WRITES: dict[str, tuple[Write, Check]] = {
    "write_file": (lambda w, rel: w.write_file(rel, b"new\n", 0o640),
                   lambda p: p.read_bytes() == b"new\n"
                   and stat.S_IMODE(p.lstat().st_mode) == 0o640),
    "write_file in place": (lambda w, rel: w.write_file(rel, b"new\n", 0o640, in_place=True),
                            lambda p: p.read_bytes() == b"new\n"),
    "write_file durable": (lambda w, rel: w.write_file(rel, b"new\n", 0o600, durable=True),
                           lambda p: p.read_bytes() == b"new\n"),
    "make_dir": (lambda w, rel: w.make_dir(rel), lambda p: p.is_dir() and not p.is_symlink()),
    "symlink": (lambda w, rel: w.symlink(rel, "../source.txt"),
                lambda p: os.readlink(p) == "../source.txt"),
    "hard_link": (lambda w, rel: w.hard_link(rel, "source.txt"),
                  lambda p: p.lstat().st_nlink == 2 and p.read_text() == "source\n"),
    "make_fifo": (lambda w, rel: w.make_fifo(rel, 0o640),
                  lambda p: stat.S_ISFIFO(p.lstat().st_mode)
                  and stat.S_IMODE(p.lstat().st_mode) == 0o640),
    "rename onto it": (lambda w, rel: w.rename("source.txt", rel),
                       lambda p: p.read_text() == "source\n"),
}


@pytest.mark.parametrize("position", THROUGH_A_LINKED_FOLDER)
@pytest.mark.parametrize("operation", WRITES)
def test_a_write_through_a_linked_folder_makes_the_folder_real_and_stays_inside(
        writer: FolderWriter, work: Path, outside: Path, position: str, operation: str) -> None:
    link, rel = THROUGH_A_LINKED_FOLDER[position]
    (work / link).symlink_to(outside)
    write, check = WRITES[operation]

    write(writer, rel)

    assert not (work / link).is_symlink() and (work / link).is_dir()
    assert check(work / rel)
    assert not [p for p in work.rglob("*.tmp")]


Other = Callable[[FolderWriter, str], object]
ABSENT: dict[str, tuple[Other, object]] = {
    # operation -> what it gives for a path that is not inside the folder (an exception type)
    "chmod": (lambda w, rel: w.chmod(rel, 0o600), FileNotFoundError),
    "set_times": (lambda w, rel: w.set_times(rel, 0, 0), FileNotFoundError),
    "rename from it": (lambda w, rel: w.rename(rel, "taken.txt"), FileNotFoundError),
    "hard_link to it": (lambda w, rel: w.hard_link("linked.txt", rel), FileNotFoundError),
    "remove": (lambda w, rel: w.remove(rel), False),
    "remove_dir": (lambda w, rel: w.remove_dir(rel), False),
    "remove_tree": (lambda w, rel: w.remove_tree(rel), False),
    "stat": (lambda w, rel: w.stat(rel), None),
}


@pytest.mark.parametrize("position", THROUGH_A_LINKED_FOLDER)
@pytest.mark.parametrize("operation", ABSENT)
def test_anything_else_through_a_linked_folder_finds_the_path_absent(
        writer: FolderWriter, work: Path, outside: Path, position: str, operation: str) -> None:
    link, rel = THROUGH_A_LINKED_FOLDER[position]
    (work / link).symlink_to(outside)
    act, expected = ABSENT[operation]

    if isinstance(expected, type):
        with pytest.raises(expected) as raised:
            act(writer, rel)
        assert isinstance(raised.value, OSError)
        assert raised.value.filename in (str(work / rel), str(work / "linked.txt"))
    else:
        assert act(writer, rel) == expected

    assert (work / link).is_symlink()  # left as it was: nothing was to be made there
    assert not (work / "taken.txt").exists() and not (work / "linked.txt").exists()


@pytest.mark.parametrize("operation", WRITES)
@pytest.mark.parametrize("target", ["x", "b"])
def test_a_write_onto_a_link_replaces_the_link_itself(
        writer: FolderWriter, work: Path, outside: Path, operation: str, target: str) -> None:
    (work / "a" / "x").symlink_to(outside / target)  # to a file and to a folder outside
    write, check = WRITES[operation]

    write(writer, "a/x")

    assert check(work / "a" / "x")
    assert not (work / "a" / "x").is_symlink() or operation == "symlink"


def test_a_link_itself_is_removed_stated_and_never_followed(
        writer: FolderWriter, work: Path, outside: Path) -> None:
    (work / "to_file").symlink_to(outside / "x")
    (work / "to_folder").symlink_to(outside / "b")
    for name in ("to_file", "to_folder"):
        writer.chmod(name, 0o600)  # a link's own mode: left, and the target's too
        writer.set_times(name, 10**9, 10**9)  # the link's own times
        assert (work / name).lstat().st_mtime_ns == 10**9
        info = writer.stat(name)
        assert info is not None and stat.S_ISLNK(info.st_mode)
    with pytest.raises(NotADirectoryError):
        writer.remove_dir("to_folder")
    assert writer.remove("to_file") is True
    assert writer.remove_tree("to_folder") is True
    assert sorted(p.name for p in work.iterdir()) == ["a", "source.txt"]


def test_remove_tree_removes_links_inside_as_links_and_does_not_hang_on_a_fifo(
        writer: FolderWriter, work: Path, outside: Path) -> None:
    deep = work / "tree" / "one" / "two"
    deep.mkdir(parents=True)
    (deep / "file").write_text("x")
    (deep / "out").symlink_to(outside)
    (work / "tree" / "to_x").symlink_to(outside / "x")
    os.mkfifo(work / "tree" / "one" / "pipe")

    assert writer.remove_tree("tree") is True

    assert not (work / "tree").exists()
    assert writer.remove_tree("tree") is False


def test_a_file_written_over_a_folder_a_fifo_or_a_hard_link_replaces_it(
        writer: FolderWriter, work: Path, outside: Path) -> None:
    (work / "folder" / "inner").mkdir(parents=True)
    (work / "folder" / "inner" / "f").write_text("x")
    os.mkfifo(work / "pipe")
    os.link(outside / "x", work / "linked")

    for name in ("folder", "pipe", "linked"):
        writer.write_file(name, b"file\n", 0o600, in_place=True)  # a FIFO must not block it
        assert (work / name).read_bytes() == b"file\n"
    assert (work / "linked").stat().st_nlink == 1  # the outside file kept its own bytes


def test_a_file_is_rewritten_in_place_only_when_asked(writer: FolderWriter, work: Path) -> None:
    target = work / "a" / "f.txt"
    target.write_text("old\n")
    inode = target.stat().st_ino
    writer.write_file("a/f.txt", b"in place\n", 0o600, in_place=True)
    assert target.stat().st_ino == inode and target.read_text() == "in place\n"
    writer.write_file("a/f.txt", b"replaced\n", 0o600)
    assert target.read_text() == "replaced\n"
    assert [p.name for p in (work / "a").iterdir()] == ["f.txt"]  # no temporary file left


def test_folder_modes_are_set_on_the_folder_and_new_folders_are_made_on_the_way(
        writer: FolderWriter, work: Path) -> None:
    writer.write_file("new/deeper/f.txt", b"x", 0o644)
    writer.make_dir("new/deeper/empty")
    writer.chmod("new/deeper", 0o750)
    assert stat.S_IMODE((work / "new" / "deeper").stat().st_mode) == 0o750
    assert (work / "new" / "deeper" / "empty").is_dir()
    (work / "plain").write_text("a file where a folder belongs\n")
    writer.write_file("plain/f.txt", b"y", 0o644)
    assert (work / "plain" / "f.txt").read_bytes() == b"y"


@pytest.mark.parametrize("rel", ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a/."])
def test_a_path_that_is_not_plainly_inside_is_refused(writer: FolderWriter, rel: str) -> None:
    with pytest.raises(ValueError, match="not a relative path inside"):
        writer.write_file(rel, b"x", 0o644)


@contextlib.contextmanager
def etc_untouched(name: str) -> Iterator[None]:
    """/etc's own metadata unchanged and no ``name`` made in it (removed if it was)."""
    before = os.lstat("/etc")
    try:
        yield
    finally:
        made = Path("/etc", name)
        if made.exists() or made.is_symlink():
            if made.is_dir() and not made.is_symlink():
                made.rmdir()
            else:
                made.unlink()
            pytest.fail(f"a write went through a link into /etc ({made})")
    after = os.lstat("/etc")
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)


@pytest.mark.parametrize("position", ["etc", "a/etc"])
def test_a_link_to_etc_is_never_written_through(
        writer: FolderWriter, work: Path, position: str) -> None:
    name = f"desktop-agent-test-{uuid.uuid4().hex}"
    (work / position).symlink_to("/etc")
    with etc_untouched(name):
        writer.write_file(f"{position}/{name}", b"x", 0o644)
    assert not (work / position).is_symlink()
    (work / "final").symlink_to("/etc")
    with etc_untouched(name):
        writer.make_dir("final")
        writer.symlink(f"final/{name}", "/etc")
    assert os.readlink(work / "final" / name) == "/etc"


def test_an_error_names_the_full_path(writer: FolderWriter, work: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        writer.chmod("missing/f.txt", 0o600)
    assert raised.value.filename == str(work / "missing" / "f.txt")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.stat("a")
