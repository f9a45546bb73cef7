"""The file and search tools stay inside the workdir and say clearly what went wrong."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from desktop_agent.core.tooling.builtin import (
    BUILTIN_TOOL_NAMES,
    BuiltinToolError,
    OutsideWorkdirError,
    builtin_tools,
)
from desktop_agent.core.tooling.tools import Tool


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text("TOP SECRET\n")
    return secret_dir


@pytest.fixture
def workdir(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 'hello'\n\nmain()\n")
    (root / "notes.md").write_text("# Notes\nTODO: write more\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02TODO\x00")
    # Planted escapes: a symlinked folder and file leading out, and a dangling link.
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    (root / "escape_file").symlink_to(outside / "secret.txt")
    (root / "dangling").symlink_to(outside / "not-yet-there.txt")
    # A link that stays inside is fine.
    (root / "inside_link").symlink_to(root / "notes.md")
    return root


@pytest.fixture
def tools(workdir: Path) -> dict[str, Tool]:
    return {t.name: t for t in builtin_tools(workdir)}


def test_every_tool_is_declared_with_source_and_read_only(tools: dict[str, Tool]) -> None:
    assert tuple(tools) == BUILTIN_TOOL_NAMES
    assert {n for n, t in tools.items() if t.read_only} == {"read_file", "list_dir", "glob", "grep"}
    assert all(t.source == "builtin" for t in tools.values())
    for t in tools.values():
        assert t.to_openai_format()["function"]["parameters"]["type"] == "object"


async def test_read_file_reads_text_with_offset_and_limit(tools: dict[str, Tool]) -> None:
    text = await tools["read_file"].execute({"path": "src/app.py"})
    assert text == "def main():\n    return 'hello'\n\nmain()\n"
    part = await tools["read_file"].execute({"path": "src/app.py", "offset": 2, "limit": 1})
    assert part.startswith("    return 'hello'\n")
    assert "read on with offset=3" in part


async def test_read_file_caps_large_files(tools: dict[str, Tool], workdir: Path) -> None:
    (workdir / "big.txt").write_text("x" * 100 + "\n" * 1 + ("y" * 99 + "\n") * 50_000)
    text = await tools["read_file"].execute({"path": "big.txt"})
    assert len(text) < 70_000
    assert "read on with offset=" in text


@pytest.mark.parametrize(
    "path",
    ["../outside/secret.txt", "src/../../outside/secret.txt", "escape_file",
     "escape_dir/secret.txt"],
)
async def test_read_file_refuses_paths_leading_out(tools: dict[str, Tool], path: str) -> None:
    with pytest.raises(OutsideWorkdirError, match="outside the working directory"):
        await tools["read_file"].execute({"path": path})


async def test_absolute_paths_inside_are_fine_and_outside_refused(
    tools: dict[str, Tool], workdir: Path, outside: Path
) -> None:
    text = await tools["read_file"].execute({"path": str(workdir / "notes.md")})
    assert "TODO" in text
    with pytest.raises(OutsideWorkdirError):
        await tools["read_file"].execute({"path": str(outside / "secret.txt")})
    with pytest.raises(OutsideWorkdirError):
        await tools["read_file"].execute({"path": "/etc/passwd"})


async def test_read_file_follows_links_that_stay_inside(tools: dict[str, Tool]) -> None:
    assert "# Notes" in await tools["read_file"].execute({"path": "inside_link"})


async def test_read_file_refuses_binary_and_missing(tools: dict[str, Tool]) -> None:
    with pytest.raises(BuiltinToolError, match="binary"):
        await tools["read_file"].execute({"path": "blob.bin"})
    with pytest.raises(BuiltinToolError, match="does not exist"):
        await tools["read_file"].execute({"path": "nope.txt"})


async def test_write_file_creates_folders_and_refuses_escapes(
    tools: dict[str, Tool], workdir: Path, outside: Path
) -> None:
    result = await tools["write_file"].execute({"path": "new/deep/file.txt", "content": "hi\n"})
    assert "created new/deep/file.txt" in result
    assert (workdir / "new" / "deep" / "file.txt").read_text() == "hi\n"
    for path in ["../outside/evil.txt", "escape_dir/evil.txt", "dangling", str(outside / "x")]:
        with pytest.raises(OutsideWorkdirError):
            await tools["write_file"].execute({"path": path, "content": "pwned"})
    assert os.listdir(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_edit_file_replaces_exactly_once(tools: dict[str, Tool], workdir: Path) -> None:
    result = await tools["edit_file"].execute(
        {"path": "src/app.py", "old_string": "'hello'", "new_string": "'bye'"}
    )
    assert result == "replaced 1 occurrence in src/app.py"
    assert "return 'bye'" in (workdir / "src" / "app.py").read_text()


async def test_edit_file_fails_clearly_when_missing_or_ambiguous(
    tools: dict[str, Tool], workdir: Path
) -> None:
    app = workdir / "src" / "app.py"
    before = app.read_text()
    with pytest.raises(BuiltinToolError, match="not found"):
        await tools["edit_file"].execute({"path": "src/app.py", "old_string": "absent",
                                          "new_string": "x"})
    with pytest.raises(BuiltinToolError, match="occurs 2 times"):
        await tools["edit_file"].execute({"path": "src/app.py", "old_string": "main()",
                                          "new_string": "run()"})
    assert app.read_text() == before
    result = await tools["edit_file"].execute(
        {"path": "src/app.py", "old_string": "main()", "new_string": "run()", "replace_all": True}
    )
    assert result == "replaced 2 occurrences in src/app.py"
    assert app.read_text().count("run()") == 2


async def test_edit_file_keeps_windows_line_endings(tools: dict[str, Tool], workdir: Path) -> None:
    (workdir / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    await tools["edit_file"].execute({"path": "crlf.txt", "old_string": "two", "new_string": "2"})
    assert (workdir / "crlf.txt").read_bytes() == b"one\r\n2\r\n"


async def test_edit_file_refuses_escapes(tools: dict[str, Tool], outside: Path) -> None:
    with pytest.raises(OutsideWorkdirError):
        await tools["edit_file"].execute({"path": "escape_file", "old_string": "TOP",
                                          "new_string": "NOT"})
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_list_dir_marks_folders_and_outside_links(tools: dict[str, Tool]) -> None:
    listing = (await tools["list_dir"].execute({})).splitlines()
    assert "src/" in listing
    assert "notes.md  25 bytes" in listing
    assert "escape_dir@  (link leads outside; not usable)" in listing
    assert "inside_link@" in listing
    with pytest.raises(OutsideWorkdirError):
        await tools["list_dir"].execute({"path": "escape_dir"})
    with pytest.raises(OutsideWorkdirError):
        await tools["list_dir"].execute({"path": ".."})


async def test_glob_finds_files_but_never_outside(tools: dict[str, Tool]) -> None:
    found = (await tools["glob"].execute({"pattern": "**/*"})).splitlines()
    assert "src/app.py" in found
    assert "notes.md" in found
    assert not any("secret" in line for line in found)
    assert "escape_file" not in found
    for pattern in ["*/*", "*/**", "**/secret*"]:
        out = await tools["glob"].execute({"pattern": pattern})
        assert "secret.txt" not in out
    with pytest.raises(OutsideWorkdirError, match="'escape_dir' is outside"):
        await tools["glob"].execute({"pattern": "escape_dir/*"})
    assert await tools["glob"].execute({"pattern": "*.py", "path": "src"}) == "src/app.py"
    for pattern in ["../*", "/etc/*"]:
        with pytest.raises(BuiltinToolError):
            await tools["glob"].execute({"pattern": pattern})


async def test_grep_matches_text_skips_binary_and_outside(tools: dict[str, Tool]) -> None:
    out = await tools["grep"].execute({"pattern": r"TODO|SECRET"})
    lines = out.splitlines()
    assert "notes.md:2: TODO: write more" in lines
    assert "inside_link:2: TODO: write more" in lines
    assert not any("SECRET" in line for line in lines)
    assert not any(line.startswith("blob.bin") for line in lines)
    assert "binary" in out
    only_md = {"pattern": "todo", "ignore_case": True, "include": "*.md"}
    assert await tools["grep"].execute(only_md) == "notes.md:2: TODO: write more"


async def test_grep_caps_results_and_reports_bad_regex(
    tools: dict[str, Tool], workdir: Path
) -> None:
    (workdir / "many.txt").write_text("hit\n" * 1000)
    out = await tools["grep"].execute({"pattern": "hit", "path": "many.txt", "max_results": 10})
    assert out.count("many.txt:") == 10
    assert "stopped at 10 matches" in out
    with pytest.raises(BuiltinToolError, match="invalid regular expression"):
        await tools["grep"].execute({"pattern": "(unclosed"})


def test_workdir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(BuiltinToolError, match="not a folder"):
        builtin_tools(tmp_path / "missing")


def test_symlink_loop_is_refused_clearly(workdir: Path) -> None:
    os.symlink(workdir / "loop", workdir / "loop")
    from desktop_agent.core.tooling.builtin import Workdir

    with pytest.raises(BuiltinToolError):
        Workdir(workdir).resolve("loop/x")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/*.py", "src/app.py", True),
        ("src/*.py", "src/deep/app.py", False),
        ("**/*.py", "app.py", True),
        ("**/*.py", "a/b/app.py", True),
        ("a/**", "a/b/c", True),
        ("file?.txt", "file1.txt", True),
        ("file[!0-9].txt", "file1.txt", False),
        ("file[ab].txt", "fileb.txt", True),
        ("*.md", "notes.md.bak", False),
    ],
)
def test_glob_patterns(pattern: str, path: str, matches: bool) -> None:
    from desktop_agent.core.tooling.builtin.search_tools import glob_regex

    assert bool(glob_regex(pattern).match(path)) is matches
