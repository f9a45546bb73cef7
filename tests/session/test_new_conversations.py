"""Creating a conversation: one title and one working-folder rule for the window and REST."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent.session import (
    DEFAULT_TITLE,
    create_conversation,
    new_work_folder,
    release_work_folder,
)
from desktop_agent.store import Store

NOON = 1_795_000_000.0  # any fixed moment: the folder name is its local date and minute


def test_a_new_conversation_works_in_a_dated_folder_made_under_the_root(
        store: Store, tmp_path: Path) -> None:
    root = tmp_path / "Desktop Agent"
    record = create_conversation(store, root)
    folder = Path(record.settings["workdir"])
    assert record.title == DEFAULT_TITLE == "New chat"
    assert folder.parent == root.resolve() and folder.is_dir()
    assert folder.name.startswith("Chat ") and record.id not in folder.name
    assert store.get_conversation(record.id).settings["workdir"] == str(folder)


def test_conversations_made_in_the_same_minute_never_share_a_folder(tmp_path: Path) -> None:
    folders = [new_work_folder(tmp_path, now=NOON) for _ in range(3)]
    assert len(set(folders)) == 3 and all(f.is_dir() for f in folders)
    assert [f.name for f in folders[1:]] == [f"{folders[0].name} (2)", f"{folders[0].name} (3)"]


def test_a_chosen_folder_is_kept_and_nothing_is_made_under_the_root(
        store: Store, tmp_path: Path) -> None:
    mine = tmp_path / "my project"
    mine.mkdir()
    root = tmp_path / "root"
    record = create_conversation(store, root, title="Mine", settings={"workdir": str(mine),
                                                                     "temperature": 0.2})
    assert record.settings == {"workdir": str(mine), "temperature": 0.2}
    assert record.title == "Mine" and not root.exists()


def test_refused_settings_store_nothing_and_make_no_folder(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "root"
    with pytest.raises(ValueError, match="looks like a key or token"):
        create_conversation(store, root, settings={"api_key": "sk-" + "a" * 40})
    assert store.list_conversations() == [] and not root.exists()


def test_an_unwritable_root_still_gives_a_conversation_its_folder_name(
        store: Store, tmp_path: Path) -> None:
    root = tmp_path / "read-only"
    root.mkdir()
    root.chmod(0o500)
    try:
        record = create_conversation(store, root)
    finally:
        root.chmod(0o700)
    folder = Path(record.settings["workdir"])
    assert folder.parent == root.resolve() and folder.name.startswith("Chat ")


def test_an_unused_folder_is_released_but_never_one_with_files_or_chosen(
        store: Store, tmp_path: Path) -> None:
    root = tmp_path / "root"
    unused, used = create_conversation(store, root), create_conversation(store, root)
    (Path(used.settings["workdir"]) / "notes.txt").write_text("keep")
    mine = tmp_path / "Chat mine"
    mine.mkdir()
    assert release_work_folder(unused.settings, root) is True
    assert not Path(unused.settings["workdir"]).exists()
    assert release_work_folder(used.settings, root) is False
    assert release_work_folder({"workdir": str(mine)}, root) is False and mine.is_dir()
