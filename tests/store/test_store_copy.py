"""``desktop-agent copy-store``: a SQLite data folder into PostgreSQL, every id kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop_agent.store import NewEvent, Store

COMMAND_TIMEOUT = 120


def _copy_store(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "desktop_agent", "copy-store", *args],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def filled_sqlite(tmp_path: Path) -> Path:
    """A SQLite store with branches, events, an app setting and a second conversation."""
    path = tmp_path / "conversations.sqlite3"
    with Store.open(path) as store:
        chat = store.create_conversation("Trip to Zürich", {"model": "m"})
        question = store.add_message(chat.id, {"role": "user", "content": "Trains to Milano?"})
        store.add_message(chat.id, {"role": "assistant", "content": "First answer"})
        store.add_message(chat.id, {"role": "assistant", "content": "Second answer"},
                          parent_id=question.id)
        store.append_events([NewEvent(chat.id, "text", f'"piece {n}"', time.time())
                             for n in range(4)])
        output = "\\n".join(f"line {n}" for n in range(2000))  # kept compressed on SQLite
        store.append_events([NewEvent(chat.id, "tool_result", f'{{"output": "{output}"}}',
                                      time.time())])
        other = store.create_conversation("Cooking")
        store.add_message(other.id, {"role": "user", "content": "Boil an egg"})
        store.set_setting("open_tabs", [chat.id, other.id])
    return path


def _snapshot(store: Store) -> dict[str, object]:
    conversations = store.list_conversations(limit=-1)
    return {
        "conversations": [(c.id, c.title, c.settings, c.active_leaf_id) for c in conversations],
        "messages": {c.id: [(m.id, m.parent_id, m.message) for m in store.all_messages(c.id)]
                     for c in conversations},
        "events": {c.id: [(e.id, e.data_json) for e in store.read_events(c.id)]
                   for c in conversations},
        "tabs": store.get_setting("open_tabs"),
    }


def test_one_command_copies_everything_with_its_ids(
    filled_sqlite: Path, postgres_url: str,
) -> None:
    copied = _copy_store("--from", str(filled_sqlite),
                         env={"DESKTOP_AGENT_DATABASE_URL": postgres_url})
    assert copied.returncode == 0, copied.stderr
    assert "Copied 2 conversations, 4 messages, 5 events and 1 app settings" in copied.stdout
    assert postgres_url.split(":")[2].split("@")[0] not in copied.stdout  # no password shown

    with Store.open(filled_sqlite) as before, Store.open(postgres_url) as after:
        assert _snapshot(after) == _snapshot(before)
        chat = after.list_conversations(query="milan")[0]
        assert chat.title == "Trip to Zürich"
        assert [h.conversation_id for h in after.search("milan")] == [chat.id]
        # New rows follow the copied ones instead of colliding with them.
        reply = after.add_message(chat.id, {"role": "user", "content": "Thanks"})
        assert after.active_path(chat.id)[-1].id == reply.id
        assert after.append_events([NewEvent(chat.id, "text", '"next"', time.time())])[0].id == 6


def test_a_database_that_holds_conversations_is_refused_and_left_as_it_was(
    filled_sqlite: Path, postgres_url: str,
) -> None:
    with Store.open(postgres_url) as target:
        target.create_conversation("already here")
    refused = _copy_store("--from", str(filled_sqlite), "--to", postgres_url)
    assert refused.returncode == 1
    assert "already holds conversations" in refused.stderr
    assert "Traceback" not in refused.stderr
    with Store.open(postgres_url) as target:
        assert [c.title for c in target.list_conversations()] == ["already here"]


def test_without_a_postgresql_url_it_says_what_to_give(filled_sqlite: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DESKTOP_AGENT_DATABASE_URL"}
    result = subprocess.run(
        [sys.executable, "-m", "desktop_agent", "copy-store", "--from", str(filled_sqlite),
         "--to", "/tmp/not-a-url.sqlite3"],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False, env=env)
    assert result.returncode == 1
    assert "postgresql://user:password@host:5432/name" in result.stderr
