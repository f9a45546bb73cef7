"""A program racing a restore in the working folder never gets it to write outside (issue 47).

Another process keeps swapping a subfolder for a symlink to a folder outside
the working folder (move the folder aside, put the link in its name, take
the link away, move the folder back) while restores write and remove every
file of that subfolder, and while every other kind of write the folder
writer offers is made there. Whatever the interleaving, the outside folder
must end exactly as it began: no file changed, removed or created (a
temporary file included). CI runs this file as root and again as a normal
user (``.ci/sandbox_as_user.sh``): the folders a write may reach differ.

The restore is called directly, not through ``CheckpointStore.undo_turn``:
the store scans the folder first, and a scan that meets the racer mostly
finds nothing to put back, so the race would rarely reach the writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from desktop_agent.workspace.checkpoints import CheckpointStore
from desktop_agent.workspace.folder_restore import apply_restore
from desktop_agent.workspace.folder_scan import Entry, Limits, scan_folder
from desktop_agent.workspace.folder_writer import FolderWriter
from desktop_agent.workspace.object_store import ObjectStore

FILES = 40
ROUNDS = 200

# The racer: prints "ready" once it has swapped the folder for the link once,
# then swaps on until the stop file appears, and prints how many swaps it made.
RACER = r"""
import os, shutil, sys, time
sub, outside, stop, hold = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
away = sub + ".away"
swaps = 0
while True:
    try:
        os.rename(sub, away)
    except OSError:
        pass
    try:
        os.symlink(outside, sub)
        swaps += 1
    except OSError:
        pass
    if hold:
        time.sleep(hold)
    if swaps == 1:
        print("ready", flush=True)
        swaps += 1
    try:
        if os.path.islink(sub):
            os.unlink(sub)
    except OSError:
        pass
    try:
        os.rename(away, sub)
    except OSError:  # the restore made a real folder there meanwhile
        shutil.rmtree(away, ignore_errors=True)
    if hold:
        time.sleep(hold)
    if swaps % 64 == 0 and os.path.exists(stop):
        break
print(swaps, flush=True)
"""


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``folder``: its mode and a digest of its bytes (or link target)."""
    found: dict[str, tuple[int, str]] = {}
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            full = Path(parent, name)
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                body = os.readlink(full).encode()
            elif stat.S_ISREG(st.st_mode):
                body = full.read_bytes()
            else:
                body = b""
            found[full.relative_to(folder).as_posix()] = (
                st.st_mode, hashlib.sha256(body).hexdigest())
    return found


def changed(before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]]) -> list[str]:
    """The paths made, removed or altered between two snapshots, each with what happened."""
    return sorted([f"{p} changed" for p in before.keys() & after.keys() if before[p] != after[p]]
                  + [f"{p} removed" for p in before.keys() - after.keys()]
                  + [f"{p} created" for p in after.keys() - before.keys()])


@contextlib.contextmanager
def racing(sub: Path, outside: Path, stop: Path, hold: float = 0) -> Iterator[list[int]]:
    """Run the racer while the block runs; yields a list that gets its swap count.

    ``hold``: seconds the racer leaves the link, then the folder, in place
    each time: a slow reader (a scan of a large folder) that must first see
    the folder and then meet the link is hit more often so.
    """
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(sub), str(outside), str(stop),
                              str(hold)], stdout=subprocess.PIPE, text=True)
    swaps: list[int] = []
    try:
        assert racer.stdout is not None
        assert racer.stdout.readline().strip() == "ready"
        yield swaps
    finally:
        stop.touch()
        out, _ = racer.communicate()
        swaps.append(int(out.strip() or 0))


def make_folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A working folder with ``sub/`` of files, and an outside folder of the same names."""
    workdir = tmp_path / "work"
    outside = tmp_path / "outside"
    (workdir / "sub").mkdir(parents=True)
    outside.mkdir()
    for n in range(FILES):
        (workdir / "sub" / f"f{n:03d}.txt").write_text(f"inside {n}\n" * 20)
        (outside / f"f{n:03d}.txt").write_text(f"outside {n}\n")
    (outside / "only-outside.txt").write_text("never touched\n")
    (outside / "tree").mkdir()
    (outside / "tree" / "kept.txt").write_text("outside tree\n")
    return workdir, workdir / "sub", outside


def test_restores_raced_by_a_folder_swapped_for_a_link_never_write_outside(
        tmp_path: Path) -> None:
    workdir, sub, outside = make_folders(tmp_path)
    objects = ObjectStore(tmp_path / "objects")
    recorded = scan_folder(str(workdir), {}, 0, Limits(), objects).entries
    files = sorted(p for p in recorded if p != "sub")
    nothing: dict[str, Entry] = {}
    before = snapshot(outside)

    with racing(sub, outside, tmp_path / "stop") as swaps:
        for _ in range(ROUNDS):
            # Write every file back, then remove every file: both through `sub`.
            with contextlib.suppress(OSError):  # the racer may make a round fail: fine
                apply_restore(str(workdir), sorted(recorded), recorded, nothing, objects)
            with contextlib.suppress(OSError):
                apply_restore(str(workdir), files, nothing, recorded, objects)
    assert swaps[0] > 0

    assert changed(before, snapshot(outside)) == []
    # Unraced, the same restore puts the folder back whatever the racer left there.
    apply_restore(str(workdir), sorted(recorded), recorded, nothing, objects)
    assert not sub.is_symlink()
    assert [(sub / f"f{n:03d}.txt").read_text() for n in (0, FILES - 1)] == \
        ["inside 0\n" * 20, f"inside {FILES - 1}\n" * 20]


def test_every_writer_operation_raced_by_a_folder_swapped_for_a_link_stays_inside(
        tmp_path: Path) -> None:
    workdir, sub, outside = make_folders(tmp_path)
    before = snapshot(outside)
    # Each names a path of sub/ that also exists outside, or one a bug would make there.
    operations = [
        lambda w: w.write_file("sub/f000.txt", b"new\n", 0o600),
        lambda w: w.write_file("sub/f001.txt", b"new\n", 0o600, in_place=True),
        lambda w: w.symlink("sub/f002.txt", "/etc/passwd"),
        lambda w: w.hard_link("sub/f003.txt", "sub/f004.txt"),
        lambda w: w.make_fifo("sub/f005.txt", 0o600),
        lambda w: w.chmod("sub/f006.txt", 0o600),
        lambda w: w.set_times("sub/f007.txt", 0, 0),
        lambda w: w.rename("sub/f008.txt", "sub/f009.txt"),
        lambda w: w.remove("sub/f010.txt"),
        lambda w: w.remove_dir("sub/tree"),
        lambda w: w.remove_tree("sub/tree"),
        lambda w: w.make_dir("sub/tree/kept.txt"),
        lambda w: w.write_file(f"sub/f{FILES - 1:03d}.txt", b"last\n", 0o644),
    ]

    with racing(sub, outside, tmp_path / "stop") as swaps, FolderWriter(workdir) as writer:
        for _ in range(ROUNDS // 2):
            for operation in operations:
                with contextlib.suppress(OSError):
                    operation(writer)
    assert swaps[0] > 0

    assert changed(before, snapshot(outside)) == []


def test_checkpoints_raced_by_a_folder_swapped_for_a_link_never_record_a_file_from_outside(
        tmp_path: Path) -> None:
    workdir, sub, outside = make_folders(tmp_path)
    secret = b"a key the agent must never see\n"
    (outside / "secret.txt").write_bytes(secret)
    for n in range(300):  # folders scanned between seeing `sub` and entering it
        (workdir / f"d{n:03d}").mkdir()
        (workdir / f"d{n:03d}" / "f.txt").write_text(f"{n}\n")
    store = CheckpointStore(tmp_path / "checkpoints")

    recorded: set[str] = set()
    with racing(sub, outside, tmp_path / "stop", hold=0.002) as swaps:
        for n in range(ROUNDS // 2):
            taken = store.checkpoint(workdir, kind="tool_round", turn=f"t{n}")
            recorded.update(store.entries_of(taken.id))
    assert swaps[0] > 0

    # A restore would put whatever a checkpoint holds back inside the folder.
    assert not store.objects.has(hashlib.sha256(secret).hexdigest())
    assert sorted(p for p in recorded if p.endswith(("secret.txt", "only-outside.txt"))) == []
