"""Settings change through the session: checked against the schema, patched by key."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_agent.session import SettingsChanged, SettingsError
from desktop_agent.store import Store


async def test_an_invalid_value_is_refused_with_a_sentence_and_nothing_is_saved(
        make_session: Any, store: Store) -> None:
    session = make_session(temperature=0.5)
    with pytest.raises(SettingsError) as refused:
        session.update_settings(temperature=5, max_tokens=100)
    assert str(refused.value).startswith("Invalid setting 'temperature'")
    assert "less than or equal to 2" in str(refused.value)
    saved = store.get_conversation(session.conversation_id).settings
    assert saved["temperature"] == 0.5 and "max_tokens" not in saved
    assert not any(isinstance(e, SettingsChanged) for e in session.events)
    await session.close()


async def test_a_patch_keeps_keys_another_writer_saved_and_reports_the_change(
        make_session: Any, store: Store) -> None:
    session = make_session(temperature=0.5)
    store.patch_settings(session.conversation_id, {"system_prompt": "Be brief."})  # elsewhere
    session.update_settings(temperature=0.1, max_tokens=None)
    saved = store.get_conversation(session.conversation_id).settings
    assert saved["temperature"] == 0.1 and saved["system_prompt"] == "Be brief."
    changed = [e for e in session.events if isinstance(e, SettingsChanged)]
    assert changed and changed[-1].settings["temperature"] == 0.1
    assert session.settings["system_prompt"] == "Be brief."
    await session.close()


async def test_removing_a_setting_with_none_restores_its_default(
        make_session: Any, store: Store) -> None:
    session = make_session(temperature=0.5)
    session.update_settings(temperature=None)
    assert "temperature" not in store.get_conversation(session.conversation_id).settings
    await session.close()
