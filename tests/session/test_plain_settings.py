"""The server-and-model keys are checked without pydantic, to the schema's own limits.

A window whose search found a model server saves it into its conversations; that
check no longer loads pydantic (~10 MB of an idle window, tests/gui/test_idle_imports.py).
These pin that the light rules are the schema's, and that what they pass the schema
passes too.
"""

from __future__ import annotations

import typing
from typing import Any

import annotated_types
import pytest

from desktop_agent.session import SettingsError
from desktop_agent.session.settings.conversation_settings import (
    ConversationSettings,
    stored_settings,
)
from desktop_agent.session.settings.plain_settings import PLAIN_RULES, plainly_valid
from desktop_agent.store import Store


def _schema_limits(key: str) -> dict[str, Any]:
    field = ConversationSettings.model_fields[key]
    limits: dict[str, Any] = {}
    for item in field.metadata:
        for name in ("min_length", "max_length", "ge", "le"):
            if isinstance(item, getattr(annotated_types, {"min_length": "MinLen",
                                                           "max_length": "MaxLen",
                                                           "ge": "Ge", "le": "Le"}[name])):
                limits[name] = getattr(item, name)
    kinds = [a for a in typing.get_args(field.annotation) if a is not type(None)]
    limits["kinds"] = kinds
    return limits


@pytest.mark.parametrize("key", sorted(PLAIN_RULES))
def test_each_light_rule_carries_the_schemas_type_and_limits(key: str) -> None:
    rule = PLAIN_RULES[key]
    schema = _schema_limits(key)
    [kind] = schema["kinds"]
    if typing.get_origin(kind) is typing.Literal:
        assert rule.kind is str and rule.choices == typing.get_args(kind)
    else:
        assert rule.kind is kind
    for name in ("min_length", "max_length", "ge", "le"):
        assert getattr(rule, name) == schema.get(name), name
    assert rule.web_address == (key == "base_url")  # the schema's validator for it


SAMPLES: list[dict[str, Any]] = [
    {"base_url": "http://127.0.0.1:1234/v1", "model": "qwen3-4b", "context_length": 8192,
     "vision": False, "api_key_name": None, "server": None},
    {"server": "local", "model": "SmolLM2-135M.gguf", "base_url": None},
    {"base_url": "ftp://example.com"}, {"base_url": "http://a b"}, {"base_url": ""},
    {"base_url": "http://" + "x" * 1994}, {"base_url": "http://" + "x" * 1993},
    {"model": ""}, {"model": "m" * 4001}, {"model": 7}, {"api_key_name": ""},
    {"context_length": 0}, {"context_length": 100_000_001}, {"context_length": True},
    {"context_length": "8192"}, {"context_length": 8192.0}, {"vision": 1}, {"vision": "yes"},
    {"server": "remote"}, {"temperature": 0.5}, {"unknown_key": 1},
]


@pytest.mark.parametrize("changes", SAMPLES)
def test_what_the_light_check_passes_the_schema_passes(changes: dict[str, Any]) -> None:
    if plainly_valid(changes):
        stored_settings({k: v for k, v in changes.items() if v is not None})


def test_the_values_a_found_server_writes_pass_plainly() -> None:
    assert plainly_valid(SAMPLES[0]) and plainly_valid(SAMPLES[1])


async def test_a_bad_server_address_is_still_refused_with_a_sentence(
        make_session: Any, store: Store) -> None:
    session = make_session()
    before = dict(store.get_conversation(session.conversation_id).settings)
    with pytest.raises(SettingsError) as refused:
        session.update_settings(base_url="ftp://example.com/v1", model="m")
    assert "'base_url'" in str(refused.value)
    assert store.get_conversation(session.conversation_id).settings == before
    await session.close()

