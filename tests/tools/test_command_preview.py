"""Commands previewed on a real overlay under real bubblewrap: what the change set says.

Each test runs a real command with the working folder as the overlay's lower
layer and a private upper layer, then checks the change set read back from
the upper layer, and that the working folder itself is byte for byte as it
was (nothing reaches it before Apply). CI runs this file as root (the overlay
keeps its marks in ``trusted.overlay.*``) and again as a normal user
(``.ci/sandbox_as_user.sh``: mounted in a user namespace, ``user.overlay.*``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_agent.core.tooling.builtin import SandboxPolicy, Workdir, builtin_tools
from desktop_agent.core.tooling.builtin.change_set import ChangeSet, PathChange
from desktop_agent.core.tooling.builtin.command_limits import CommandLimits
from desktop_agent.core.tooling.builtin.command_preview import (
    CommandPreview,
    CommandPreviews,
    PreviewUnavailableError,
    free_bytes,
    preview_command,
    preview_problem,
)
from desktop_agent.core.tooling.builtin.overlay_mount import mount_ways, try_preview
from tests.tier_policy import part_missing
from tests.tools.folder_snapshot import snapshot
from tests.tools.process_checks import processes_running, wait_until_gone

pytestmark = pytest.mark.usefixtures("bubblewrap", "overlay")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    (folder / "src" / "pkg").mkdir(parents=True)
    (folder / "src" / "main.py").write_text("print('hello')\n")
    (folder / "src" / "pkg" / "__init__.py").write_text("")
    (folder / "src" / "pkg" / "util.py").write_text("def util():\n    return 1\n")
    (folder / "README.md").write_text("# Project\n")
    (folder / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(folder / "run.sh", 0o644)
    return folder


async def _preview(work: Path, command: str, tmp_path: Path, **options: object
                   ) -> CommandPreview:
    before = snapshot(work)
    preview = await preview_command(command, Workdir(work), tmp_path / "previews",
                                    time_limit=120, **options)  # type: ignore[arg-type]
    assert snapshot(work) == before, "a preview reached the working folder"
    return preview


@contextlib.contextmanager
def _kept(preview: CommandPreview) -> Iterator[CommandPreview]:
    try:
        yield preview
    finally:
        preview.discard()
        assert not preview.layers.exists()


def _by_path(changes: ChangeSet) -> dict[str, PathChange]:
    return {c.path: c for c in changes.changes}


async def test_rm_rf_of_a_folder_is_one_deletion_counting_its_files(
        work: Path, tmp_path: Path) -> None:
    with _kept(await _preview(work, "rm -rf src && echo gone", tmp_path)) as preview:
        assert "gone" in preview.result.stdout
        changes = _by_path(preview.changes)
        assert list(changes) == ["src"]
        assert changes["src"].change == "deleted" and changes["src"].kind == "dir"
        assert changes["src"].files == 3
        assert preview.summary() == "deletes 3 files"
        # Every file the deletion takes is recorded as it was, for conflicts at Apply.
        assert set(preview.changes.before) >= {"src", "src/main.py", "src/pkg/util.py"}


async def test_created_modified_and_deleted_files_with_counts(work: Path, tmp_path: Path) -> None:
    command = ("echo new > new.txt; echo more >> README.md; printf 'a\\nb\\n' > src/main.py; "
               "rm run.sh; touch src/pkg/__init__.py; cat README.md > /dev/null")
    with _kept(await _preview(work, command, tmp_path)) as preview:
        changes = _by_path(preview.changes)
        assert {p: c.change for p, c in changes.items()} == {
            "new.txt": "created", "README.md": "modified", "src/main.py": "modified",
            "run.sh": "deleted"}  # a touch changes no bytes: not a change
        assert changes["README.md"].old_size == 10 and changes["README.md"].size == 15
        assert preview.summary() == "creates 1 file, changes 2, deletes 1"
        assert preview.changes.before["new.txt"] is None
        assert preview.changes.before["README.md"] is not None


async def test_chmod_is_a_mode_change(work: Path, tmp_path: Path) -> None:
    with _kept(await _preview(work, "chmod -R go-rwx src; chmod +x run.sh", tmp_path)) as preview:
        changes = _by_path(preview.changes)
        assert changes["run.sh"].change == "mode"
        assert (changes["run.sh"].old_mode, changes["run.sh"].mode) == (0o644, 0o755)
        assert changes["src/pkg"].change == "mode" and changes["src/pkg"].kind == "dir"
        assert changes["src/main.py"].mode == 0o600
        assert "changes the mode of" in preview.summary()


async def test_links_hard_links_and_fifos(work: Path, tmp_path: Path) -> None:
    command = "ln -s /etc/passwd x; ln README.md again.md; mkfifo pipe; ln -s src/main.py m"
    with _kept(await _preview(work, command, tmp_path)) as preview:
        changes = _by_path(preview.changes)
        assert changes["x"].kind == "link" and changes["x"].target == "/etc/passwd"
        assert changes["m"].target == "src/main.py"
        assert changes["again.md"].hard_link_of == "README.md"
        assert changes["pipe"].kind == "fifo" and changes["pipe"].change == "created"
        assert "README.md" not in changes  # copied up to be linked, its bytes the same


async def test_moved_files_are_renames_and_a_moved_folder_says_where_from(
        work: Path, tmp_path: Path) -> None:
    with _kept(await _preview(work, "mv README.md READ.md && mv src lib", tmp_path)) as preview:
        changes = _by_path(preview.changes)
        assert changes["READ.md"].change == "renamed"
        assert changes["READ.md"].renamed_from == "README.md"
        assert "README.md" not in changes
        # The folder: a deletion and a creation (no redirect_dir), tied by its contents.
        assert changes["src"].change == "deleted"
        assert changes["lib"].change == "created" and changes["lib"].renamed_from == "src"
        assert changes["lib/pkg/util.py"].change == "created"


async def test_a_folder_emptied_and_made_again_is_opaque(work: Path, tmp_path: Path) -> None:
    command = "rm -rf src && mkdir src && echo fresh > src/main.py"
    with _kept(await _preview(work, command, tmp_path)) as preview:
        changes = _by_path(preview.changes)
        assert preview.changes.opaque == ["src"]
        assert changes["src/main.py"].change == "modified"
        assert changes["src/pkg"].change == "deleted" and changes["src/pkg"].files == 2


def _first_commit(work: Path) -> None:
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "first"], check=True)


async def test_git_commit_writes_objects_under_git(work: Path, tmp_path: Path) -> None:
    _first_commit(work)
    command = ("echo change >> README.md && git add README.md && "
               "git -c user.name=T -c user.email=t@example.com commit -qm second && "
               "git log --oneline | wc -l")
    with _kept(await _preview(work, command, tmp_path)) as preview:
        assert preview.result.exit_code == 0, preview.result.stderr
        assert preview.result.stdout.strip() == "2"
        changes = _by_path(preview.changes)
        objects = [p for p, c in changes.items()
                   if p.startswith(".git/objects/") and c.change == "created" and c.kind == "file"]
        assert len(objects) == 3  # a blob, a tree, a commit
        assert changes[".git/refs/heads/main"].change == "modified"
        assert changes["README.md"].change == "modified"


def _wheel(folder: Path, name: str = "tinypkg", modules: int = 3) -> Path:
    """A small, valid pure-Python wheel (made here: no network, no cache needed)."""
    dist = f"{name}-1.0"
    path = folder / f"{name}-1.0-py3-none-any.whl"
    files = {f"{name}/__init__.py": "VERSION = '1.0'\n"}
    files.update({f"{name}/mod{i}.py": f"VALUE = {i}\n" for i in range(modules)})
    files[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    files[f"{dist}.dist-info/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{dist}.dist-info/top_level.txt"] = f"{name}\n"
    record = "".join(f"{p},,\n" for p in files) + f"{dist}.dist-info/RECORD,,\n"
    files[f"{dist}.dist-info/RECORD"] = record
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    path.write_bytes(buffer.getvalue())
    return path


def _system_pip() -> None:
    if subprocess.run(["/usr/bin/python3", "-m", "pip", "--version"], capture_output=True,
                      check=False).returncode:
        pytest.fail("the system python3 has no pip; install python3-pip")


async def test_pip_install_target_from_a_local_wheel(work: Path, tmp_path: Path) -> None:
    _system_pip()
    wheel = _wheel(work)
    command = (f"python3 -m pip install --quiet --no-index --no-deps --no-cache-dir "
               f"--disable-pip-version-check --target vendor ./{wheel.name} && "
               "python3 -c 'import sys; sys.path.insert(0, \"vendor\"); import tinypkg.mod2 as m; "
               "print(m.VALUE)'")
    with _kept(await _preview(work, command, tmp_path)) as preview:
        assert preview.result.exit_code == 0, preview.result.stderr
        assert preview.result.stdout.strip() == "2"
        created = {c.path for c in preview.changes.changes if c.change == "created"}
        assert {"vendor", "vendor/tinypkg/mod2.py", "vendor/tinypkg/__init__.py"} <= created
        assert all(p == "vendor" or p.startswith("vendor/") for p in created), created


def _npm_package(folder: Path, cache: Path) -> Path:
    """A small npm package packed into ``folder`` (made here: no registry, no network)."""
    if shutil.which("npm") is None:
        part_missing("npm is not installed (apt-get install -y npm)")
    source = folder.parent / "tinymod-src"
    source.mkdir()
    (source / "package.json").write_text(json.dumps(
        {"name": "tinymod", "version": "1.0.0", "main": "index.js", "license": "MIT"}))
    (source / "index.js").write_text("module.exports = 42;\n")
    packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(folder)],
                            cwd=source, capture_output=True, text=True, check=True,
                            env={**os.environ, "npm_config_cache": str(cache)})
    return folder / packed.stdout.split()[-1]


async def test_npm_install_of_a_local_package(work: Path, tmp_path: Path) -> None:
    tarball = _npm_package(work, tmp_path / "npm-cache")
    # The sandbox hides home: npm's cache goes to the command's private /tmp.
    command = (f"npm install --offline --no-audit --no-fund --cache /tmp/npm ./{tarball.name} "
               "&& node -e 'console.log(require(\"tinymod\"))'")
    with _kept(await _preview(work, command, tmp_path)) as preview:
        assert preview.result.exit_code == 0, preview.result.stderr
        assert preview.result.stdout.strip().endswith("42")
        created = {c.path for c in preview.changes.changes if c.change == "created"}
        assert {"node_modules", "node_modules/tinymod/index.js", "package.json",
                "package-lock.json"} <= created, created
        assert "creates" in preview.summary()


async def test_a_preview_keeps_the_sandboxs_rules(work: Path, tmp_path: Path) -> None:
    from tests.tools.test_sandbox import _Listener

    listener = _Listener()
    marker = f"preview-{uuid.uuid4().hex}"
    probe = (f"echo x > /tmp/{marker}; (echo y > /usr/{marker}) 2>/dev/null || echo READONLY; "
             f"(echo hi > /dev/tcp/127.0.0.1/{listener.port}) 2>/dev/null "
             "&& echo CONNECTED || echo REFUSED")
    try:
        with _kept(await _preview(work, probe, tmp_path)) as closed:
            assert "READONLY" in closed.result.stdout and "REFUSED" in closed.result.stdout
            assert closed.changes.empty and listener.accepted == 0  # /tmp is its own
        assert marker not in os.listdir("/tmp")  # the host's /tmp saw nothing
        with _kept(await _preview(work, probe, tmp_path,
                                  sandbox=SandboxPolicy(network=True))) as opened:
            assert "CONNECTED" in opened.result.stdout and await listener.counted(1) == 1
    finally:
        listener.close()


async def test_the_file_size_limit_holds_in_the_upper_layer(work: Path, tmp_path: Path) -> None:
    policy = SandboxPolicy(limits=CommandLimits(file_mb=8))
    with _kept(await _preview(work, "head -c 1G /dev/zero > big; echo after", tmp_path,
                              sandbox=policy)) as preview:
        assert preview.result.limit is not None and "size limit of 8 MiB" in preview.result.limit
        assert _by_path(preview.changes)["big"].size == 8 << 20
        assert preview.incomplete is None  # the limit stopped it, the disk did not fill


async def test_a_background_process_dies_with_the_preview(work: Path, tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 1000 + 3000}.{uuid.uuid4().int % 1000:03d}"
    command = f"(sleep {marker}; echo late > late.txt) > /dev/null 2>&1 & echo started"
    with _kept(await _preview(work, command, tmp_path)) as preview:
        assert "started" in preview.result.stdout
        assert await wait_until_gone(f"sleep {marker}"), processes_running(f"sleep {marker}")
        assert "late.txt" not in _by_path(preview.changes)
    assert not (work / "late.txt").exists()


@contextlib.contextmanager
def _small_disk(folder: Path) -> Iterator[int]:
    """A disk for the upper layers that fills after a few MiB: its reserve in MiB.

    As root: a real 48 MiB tmpfs mounted on ``folder`` (reserve 8 MiB, so the
    watcher stops the command before the kernel says ENOSPC, or ENOSPC comes
    first: both end the same way). As a normal user no disk can be mounted;
    the reserve is set 40 MiB below what the folder's disk has free, which the
    same watcher enforces (a quota-like limit on the same code path).
    """
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(folder)],
                       check=True)
        try:
            yield 8
        finally:
            subprocess.run(["umount", "-l", str(folder)], check=False)
    else:
        yield max(1, (free_bytes(folder) >> 20) - 40)


async def test_a_command_filling_the_data_folders_disk_is_stopped_and_said(
        work: Path, tmp_path: Path) -> None:
    previews = tmp_path / "previews"
    with _small_disk(previews) as reserve:
        before = snapshot(work)
        preview = await preview_command("head -c 2G /dev/zero > huge; echo after", Workdir(work),
                                        previews, time_limit=120, min_free_mb=reserve)
        try:
            assert preview.incomplete is not None and "filled up" in preview.incomplete
            assert snapshot(work) == before
        finally:
            preview.discard()
        assert not preview.layers.exists()


async def test_a_full_disk_refuses_to_start_a_preview(work: Path, tmp_path: Path) -> None:
    folder = tmp_path / "previews"
    folder.mkdir()
    too_much = (free_bytes(folder) >> 20) + 1024
    with pytest.raises(Exception, match="MiB free"):
        await preview_command("echo x > x", Workdir(work), folder, min_free_mb=too_much)
    assert not (work / "x").exists()


def test_previews_say_why_they_cannot_work(tmp_path: Path) -> None:
    assert "off" in (preview_problem(SandboxPolicy(level="off"), tmp_path) or "")
    assert "read-only" in (preview_problem(SandboxPolicy(level="read_only"), tmp_path) or "")
    assert preview_problem(SandboxPolicy(), tmp_path / "previews") is None


async def test_the_bash_tool_previews_and_the_model_reads_the_verdict(
        work: Path, tmp_path: Path) -> None:
    seen: list[CommandPreview] = []

    async def decide(preview: CommandPreview) -> str:
        seen.append(preview)
        assert preview.layers.exists()
        return "discarded: not now"

    previews = CommandPreviews(tmp_path / "previews", decide)
    bash = builtin_tools(work, include=("bash",), previews=previews)[0]
    assert "applied or discarded" in bash.description
    before = snapshot(work)
    out = await bash.execute({"command": "echo hi > hi.txt && rm README.md && echo done"})
    assert "done" in out and "creates 1 file, deletes 1" in out
    assert out.rstrip().endswith("preview outcome: discarded: not now")
    assert snapshot(work) == before
    assert len(seen) == 1 and not seen[0].layers.exists()
    # A command that changes nothing is not put to anyone.
    out = await bash.execute({"command": "cat README.md"})
    assert "preview outcome: nothing to apply" in out and len(seen) == 1


async def test_a_call_not_wanted_for_preview_runs_on_the_folder(work: Path, tmp_path: Path) -> None:
    async def decide(_preview: CommandPreview) -> str:
        raise AssertionError("not previewed")

    previews = CommandPreviews(tmp_path / "previews", decide, wanted=lambda _call: False)
    bash = builtin_tools(work, include=("bash",), previews=previews)[0]
    out = await bash.execute({"command": "echo hi > hi.txt"})
    assert "preview" not in out.split("\n", 1)[0] and (work / "hi.txt").read_text() == "hi\n"


async def test_where_previews_cannot_work_the_command_runs_as_today(
        work: Path, tmp_path: Path) -> None:
    async def decide(_preview: CommandPreview) -> str:
        raise AssertionError("not previewed")

    previews = CommandPreviews(tmp_path / "previews", decide)
    bash = builtin_tools(work, include=("bash",), previews=previews,
                         sandbox=SandboxPolicy(level="read_only"))[0]
    out = await bash.execute({"command": "cat README.md"})
    assert "# Project" in out and "not previewed (the sandbox keeps" in out
    with pytest.raises(PreviewUnavailableError):
        await preview_command("true", Workdir(work), tmp_path / "p",
                              sandbox=SandboxPolicy(level="off"))


def test_every_way_of_mounting_this_account_may_use_works(tmp_path: Path) -> None:
    # Root mounts in a mount namespace and, where that is refused (a container without
    # CAP_SYS_ADMIN), in a user namespace as a normal user does: both are tried here.
    for way in mount_ways():
        assert try_preview(tmp_path / way.replace(" ", "-"), way) is None, way
