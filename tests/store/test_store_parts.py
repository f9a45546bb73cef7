"""The Store's public names are its parts' methods: one signature, nothing forgotten."""

from __future__ import annotations

import inspect
from pathlib import Path

from desktop_agent.store import Store
from desktop_agent.store.part_method import PartMethod


def _declared() -> dict[str, PartMethod]:
    return {name: value for name, value in vars(Store).items() if isinstance(value, PartMethod)}


def test_every_public_method_of_every_part_is_a_store_name_with_the_part_s_signature(
        store: Store) -> None:
    declared = _declared()
    parts = {method.part for method in declared.values()}
    assert len(parts) == 10
    for attribute in parts:
        part = getattr(store, attribute)
        public = {name for name, value in vars(type(part)).items()
                  if callable(value) and not name.startswith("_")}
        missing = public - set(declared)
        assert not missing, f"{type(part).__name__} methods not reachable on Store: {missing}"
        for name in public:
            assert declared[name].part == attribute, name
            through_store = getattr(store, name)
            assert inspect.signature(through_store) == inspect.signature(getattr(part, name))
            assert through_store.__doc__ == getattr(part, name).__doc__


def test_names_work_on_the_instance_and_on_the_class_against_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    with Store.open(path) as store:
        record = store.create_conversation("first")
        Store.add_message(store, record.id, {"role": "user", "content": "hello"})
        store.add_message(record.id, {"role": "assistant", "content": "hi"})
    with Store.open(path) as reopened:  # what was written is in the file, not in a cache
        assert [m.message["content"] for m in reopened.active_path(record.id)] == ["hello", "hi"]
        assert Store.count_messages(reopened, record.id) == 2


def test_two_stores_never_share_a_part(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.sqlite3") as first, Store.open(tmp_path / "b.sqlite3") as second:
        first.create_conversation("only in a")
        assert first.get_setting is not second.get_setting
        assert [c.title for c in first.list_conversations()] == ["only in a"]
        assert second.list_conversations() == []
