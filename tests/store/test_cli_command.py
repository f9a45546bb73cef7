"""``desktop-agent export`` / ``import``: in-process handlers and the real entry point."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_agent.cli import transfer as cli_command
from desktop_agent.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="desktop-agent")
    cli_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.handler(args))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.sqlite3"
    with Store.open(path) as store:
        for title in ("Alpha", "Beta"):
            conv = store.create_conversation(title, {"model": "m"})
            store.add_message(conv.id, {"role": "user", "content": f"hi {title}"})
            store.add_message(conv.id, {"role": "assistant", "content": f"hello {title}"})
    return path


def _ids(db: Path) -> dict[str, str]:
    with Store.open(db) as store:
        return {c.title: c.id for c in store.list_conversations()}


def test_export_all_then_import_into_another_database(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "all.json"
    assert _run(["export", "--all", "-o", str(out), "--database", str(db)]) == 0
    assert "Exported 2 conversation(s)" in capsys.readouterr().err
    other = tmp_path / "other.sqlite3"
    assert _run(["import", str(out), str(out), "--database", str(other)]) == 0
    captured = capsys.readouterr()
    assert "Imported 4 conversation(s)." in captured.err
    assert captured.out.count("Imported 'Alpha' as ") == 2
    with Store.open(other) as store:
        assert sorted(c.title for c in store.list_conversations()) == [
            "Alpha",
            "Alpha",
            "Beta",
            "Beta",
        ]


def test_export_by_id_prefix_and_list(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _ids(db)
    assert _run(["export", "--list", "--database", str(db)]) == 0
    listing = capsys.readouterr().out
    assert ids["Alpha"] in listing and "Beta" in listing
    assert _run(["export", ids["Beta"][:10], "--database", str(db)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [c["title"] for c in document["conversations"]] == ["Beta"]


def test_markdown_export_to_a_file_and_a_folder(db: Path, tmp_path: Path) -> None:
    ids = _ids(db)
    one = tmp_path / "alpha.md"
    assert (
        _run(
            ["export", ids["Alpha"], "--format", "markdown", "-o", str(one), "--database", str(db)]
        )
        == 0
    )
    assert one.read_text().startswith("# Alpha")
    folder = tmp_path / "md"
    folder.mkdir()
    assert (
        _run(["export", "--all", "--format", "markdown", "-o", str(folder), "--database", str(db)])
        == 0
    )
    assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export"], "name the conversations to export, or pass --all"),
        (["export", "zzzz"], "no conversation has the id 'zzzz'"),
        (["export", "--all", "abc"], "not both"),
    ],
)
def test_export_mistakes_get_one_clear_line(
    db: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run([*argv, "--database", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("desktop-agent export: error: ") and message in err
    assert "Traceback" not in err


def test_a_bad_import_file_imports_nothing(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"messages": [{"role": "user", "content": "x"}]}))
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    assert _run(["import", str(good), str(bad), "--database", str(db)]) == 1
    err = capsys.readouterr().err
    assert "bad.json: is not valid JSON" in err and "Nothing was imported." in err
    assert len(_ids(db)) == 2


def test_an_unusable_database_is_reported_not_traced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database at all" * 50)
    assert _run(["export", "--all", "--database", str(broken)]) == 1
    err = capsys.readouterr().err
    assert "not a Desktop Agent conversation database" in err and "Traceback" not in err


def test_the_installed_entry_point_runs_export_and_import(db: Path, tmp_path: Path) -> None:
    env = dict(os.environ, DESKTOP_AGENT_DATA_DIR=str(tmp_path / "appdata"))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = tmp_path / "via-cli.json"
    exported = subprocess.run(
        [
            sys.executable,
            "-m",
            "desktop_agent",
            "export",
            "--all",
            "-o",
            str(out),
            "--database",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    imported = subprocess.run(
        [sys.executable, "-m", "desktop_agent", "import", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    with Store.open(tmp_path / "appdata" / "conversations.sqlite3") as store:
        assert store.count_conversations() == 2
