"""Apply and discard of real previews: the folder ends as if the command had run on it.

The oracle: the same command run for real on a copy of the folder (under the
same sandbox). Applying its preview must give the folder the very paths,
kinds, modes, bytes and link texts (times aside), with no link followed on
the way. Conflicts are named and nothing is written; a racing program that
swaps a folder for a link while Apply writes into it reaches nothing outside.
CI runs this file as root and as a normal user (``.ci/sandbox_as_user.sh``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.tooling.builtin import SandboxPolicy, Workdir, run_command
from desktop_agent.core.tooling.builtin.command_preview import CommandPreview, preview_command
from desktop_agent.workspace.checkpoints import CheckpointStore
from desktop_agent.workspace.preview_apply import (
    PreviewApplyError,
    PreviewConflictError,
    apply_changes,
    apply_preview,
    find_conflicts,
)
from tests.tools.folder_snapshot import snapshot
from tests.workspace.test_restore_race import RACER

pytestmark = pytest.mark.usefixtures("bubblewrap", "overlay")


def _project(folder: Path) -> Path:
    (folder / "src" / "pkg").mkdir(parents=True)
    (folder / "src" / "main.py").write_text("print('hello')\n")
    (folder / "src" / "pkg" / "__init__.py").write_text("")
    (folder / "src" / "pkg" / "util.py").write_text("def util():\n    return 1\n")
    (folder / "keep").mkdir()
    (folder / "keep" / "old.txt").write_text("old\n")
    (folder / "README.md").write_text("# Project\n")
    (folder / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(folder / "run.sh", 0o644)
    (folder / "link").symlink_to("README.md")
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return _project(folder)


def _shape(folder: Path) -> dict[str, tuple[int, str]]:
    """A snapshot without times: what a person would call the folder's contents."""
    return {p: (mode, digest) for p, (mode, digest, _) in snapshot(folder).items()}


async def _preview(work: Path, command: str, tmp_path: Path) -> CommandPreview:
    return await preview_command(command, Workdir(work), tmp_path / "previews", time_limit=120)


COMMANDS = {
    "rm -rf": "rm -rf src",
    "edits": "echo new > new.txt; echo more >> README.md; rm run.sh; mkdir -p a/b/c",
    "chmod -R": "chmod -R go-rwx src && chmod 0700 keep && chmod +x run.sh",
    "mv folders": "mv src lib && mv keep/old.txt keep/new.txt && mv keep kept",
    "links": "ln -s /etc/passwd x; ln -sf src/main.py link; ln README.md hard.md; mkfifo pipe",
    "opaque": "rm -rf keep && mkdir keep && echo fresh > keep/fresh.txt",
    "replace kinds": "rm -rf src/pkg && echo file > src/pkg && rm README.md && mkdir README.md",
    "read-only folder": "mkdir ro && echo in > ro/in.txt && chmod 0555 ro",
}


@pytest.mark.parametrize("command", list(COMMANDS.values()), ids=list(COMMANDS))
async def test_apply_makes_the_folder_what_the_command_would_have(
        command: str, work: Path, tmp_path: Path) -> None:
    oracle = tmp_path / "oracle"
    shutil.copytree(work, oracle, symlinks=True)
    ran = await run_command(command, Workdir(oracle), time_limit=60)
    assert ran.exit_code == 0, ran.stderr
    preview = await _preview(work, command, tmp_path)
    try:
        applied = apply_preview(preview)
    finally:
        preview.discard()
    assert _shape(work) == _shape(oracle)
    assert applied.applied and not applied.overwritten
    if "ln README.md hard.md" in command:
        assert os.stat(work / "hard.md").st_ino == os.stat(work / "README.md").st_ino
        assert stat.S_ISFIFO(os.lstat(work / "pipe").st_mode)
        assert os.readlink(work / "x") == "/etc/passwd"  # a link, never followed


async def test_git_commit_and_pip_install_apply_like_the_real_thing(
        work: Path, tmp_path: Path) -> None:
    from tests.tools.test_command_preview import _first_commit, _system_pip, _wheel

    _system_pip()
    _first_commit(work)
    wheel = _wheel(work)
    command = ("echo change >> README.md && git add README.md && "
               "git -c user.name=T -c user.email=t@example.com commit -qm second && "
               "python3 -m pip install -q --no-index --no-deps --no-cache-dir "
               f"--disable-pip-version-check --target vendor ./{wheel.name}")
    oracle = tmp_path / "oracle"
    shutil.copytree(work, oracle, symlinks=True)
    preview = await _preview(work, command, tmp_path)
    try:
        assert preview.result.exit_code == 0, preview.result.stderr
        apply_preview(preview)
    finally:
        preview.discard()
    assert _git(work, "log", "--format=%s") == ["second", "first"]
    assert (work / "vendor" / "tinypkg" / "mod2.py").read_text() == "VALUE = 2\n"
    assert _git(work, "status", "--porcelain") == ["??", "tinypkg-1.0-py3-none-any.whl",
                                                   "??", "vendor/"]


def _git(work: Path, *args: str) -> list[str]:
    done = subprocess.run(["git", "-C", str(work), *args], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


async def test_discard_leaves_the_folder_byte_for_byte(work: Path, tmp_path: Path) -> None:
    before = snapshot(work)
    preview = await _preview(work, "rm -rf src; echo x > README.md; chmod 000 keep", tmp_path)
    assert not preview.changes.empty
    preview.discard()
    assert snapshot(work) == before
    assert not preview.layers.exists() and not any((tmp_path / "previews").iterdir())


async def test_a_file_you_edited_meanwhile_is_named_and_nothing_is_applied(
        work: Path, tmp_path: Path) -> None:
    preview = await _preview(work, "echo more >> README.md; echo new > new.txt; rm -rf src",
                             tmp_path)
    try:
        (work / "README.md").write_text("# Project\nmy own edit\n")
        (work / "src" / "pkg" / "mine.py").write_text("# appeared since\n")
        before = snapshot(work)
        with pytest.raises(PreviewConflictError) as raised:
            apply_preview(preview)
        assert raised.value.paths == ["README.md", "src/pkg/mine.py"]
        assert "Apply anyway" in str(raised.value)
        assert snapshot(work) == before
        forced = apply_preview(preview, force=True)
        assert forced.overwritten == ["README.md", "src/pkg/mine.py"]
        assert (work / "README.md").read_text() == "# Project\nmore\n"
        assert not (work / "src").exists() and (work / "new.txt").exists()
    finally:
        preview.discard()


async def test_a_deletion_you_made_too_is_no_conflict(work: Path, tmp_path: Path) -> None:
    preview = await _preview(work, "rm run.sh; rm -rf src", tmp_path)
    try:
        (work / "run.sh").unlink()
        shutil.rmtree(work / "src" / "pkg")
        assert find_conflicts(str(work), preview.changes) == []
        apply_preview(preview)
        assert not (work / "src").exists()
    finally:
        preview.discard()


@contextlib.contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """``folder`` refuses new files: read-only by mode (a user) or by mount (root)."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run(["umount", str(folder)], check=True)
    else:
        os.chmod(folder, 0o555)
        try:
            yield
        finally:
            os.chmod(folder, 0o755)


async def test_a_failure_part_way_says_what_was_applied(work: Path, tmp_path: Path) -> None:
    preview = await _preview(work, "echo a > a.txt; echo z > zz/z.txt 2>/dev/null || "
                                   "(mkdir zz && echo z > zz/z.txt); echo b > keep/b.txt",
                             tmp_path)
    try:
        with _unwritable(work / "keep"), pytest.raises(PreviewApplyError) as raised:
            apply_preview(preview)
        error = raised.value
        assert error.failed == "keep/b.txt"
        # Folders first, then files in path order: keep/b.txt comes before zz/z.txt.
        assert error.applied == ["zz", "a.txt"] and error.remaining == 3
        assert str(error).startswith("Applied 2 changes, then keep/b.txt could not be applied")
        assert "Undo the turn" in str(error)
        assert (work / "a.txt").read_text() == "a\n" and not (work / "keep" / "b.txt").exists()
        assert not (work / "zz" / "z.txt").exists()
    finally:
        preview.discard()


def _apply_while_racing(preview: CommandPreview, sub: Path, outside: Path, stop: Path) -> None:
    """Apply the preview again and again while a program swaps ``sub`` for a link to outside."""
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(sub), str(outside), str(stop),
                              "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
        for _ in range(60):
            with contextlib.suppress(OSError, PreviewApplyError):
                apply_changes(str(preview.workdir), str(preview.layers.upper), preview.changes,
                              force=True)
    finally:
        stop.touch()
        racer.communicate(timeout=60)


async def test_a_racing_symlink_swap_during_apply_writes_nothing_outside(
        work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("must stay\n")
    (work / "sub").mkdir()
    for index in range(40):
        (work / "sub" / f"f{index}.txt").write_text("old\n")
    command = "for i in $(seq 0 39); do echo new$i > sub/f$i.txt; done; echo n > sub/new.txt; " \
              "ln -s /etc/passwd sub/link; rm sub/f0.txt"
    preview = await _preview(work, command, tmp_path)
    before = snapshot(outside)
    try:
        _apply_while_racing(preview, work / "sub", outside, tmp_path / "stop")
    finally:
        preview.discard()
    assert snapshot(outside) == before
    assert not list(outside.glob(".desktop-agent-*"))


async def test_applied_changes_are_in_the_turns_checkpoint_and_undo_puts_them_back(
        work: Path, tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "data" / "checkpoints" / "c1")
    before = _shape(work)
    store.checkpoint(work, kind="tool_round", turn="t1")
    preview = await _preview(work, "rm -rf src; echo new > new.txt; chmod +x run.sh", tmp_path)
    try:
        apply_preview(preview)
    finally:
        preview.discard()
    turn = store.close_turn(work, "t1")
    assert turn is not None
    changed = {(c.path, c.change) for c in turn.changes}
    assert {("new.txt", "added"), ("src/main.py", "deleted"), ("run.sh", "modified")} <= changed
    store.undo_turn(work, "t1")
    assert _shape(work) == before


async def test_a_big_file_is_copied_not_held_in_memory(work: Path, tmp_path: Path) -> None:
    policy = SandboxPolicy()
    preview = await preview_command("head -c 64M /dev/urandom > big.bin", Workdir(work),
                                    tmp_path / "previews", sandbox=policy, time_limit=120)
    try:
        apply_preview(preview)
        upper = (preview.layers.upper / "big.bin").read_bytes()
    finally:
        preview.discard()
    assert (work / "big.bin").read_bytes() == upper and len(upper) == 64 << 20


async def test_the_sdk_bash_tool_previews_and_a_script_decides(
        work: Path, tmp_path: Path, model_server: Any) -> None:
    from desktop_agent import AgentOptions, Client
    from desktop_agent.core.tooling.builtin import CommandPreviews, builtin_tools
    from desktop_agent.testing import script
    from desktop_agent.workspace.preview_apply import applying_decider

    seen: list[str] = []

    async def choose(preview: CommandPreview) -> bool | str:
        seen.append(preview.summary())
        if any(c.change == "deleted" for c in preview.changes.changes):
            return "deletions need a person"
        return True

    previews = CommandPreviews(tmp_path / "previews", applying_decider(choose))
    options = AgentOptions(model="test-model", base_url=model_server.base_url,
                           tools=builtin_tools(work, include=("bash",), previews=previews),
                           auto_execute_tools=True)
    model_server.enqueue(
        script.tool_calls([("bash", {"command": "echo made > made.txt"})]),
        script.tool_calls([("bash", {"command": "rm -rf src"})]), script.text("Done."))
    results: list[str] = []
    async with Client(options) as client:
        await client.query("go")
        async for block in client.receive_messages():
            content = getattr(block, "content", None)
            if getattr(block, "tool_use_id", None) and isinstance(content, str):
                results.append(content)
    assert seen == ["creates 1 file", "deletes 3 files"]
    assert (work / "made.txt").read_text() == "made\n" and (work / "src").is_dir()
    assert results[0].rstrip().endswith("preview outcome: applied")
    assert results[1].rstrip().endswith("preview outcome: discarded: deletions need a person")
