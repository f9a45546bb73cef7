"""The check of settings an app cannot honour (tools nobody offers, a refused folder).

The REST server asks the session layer before it stores a conversation's
settings (``422 unknown_tool`` / ``bad_workdir``); here the rule itself, with a
real tool catalog and the real working-folder rule on the test's data folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session import (
    AppConfig,
    BadWorkdirError,
    SettingsError,
    ToolCatalog,
    UnknownToolError,
    check_usable_settings,
)


def catalog(data_dir: Path, weather: Any) -> ToolCatalog:
    return ToolCatalog([weather.build()], include_builtin=False,
                       config=AppConfig(data_dir / "config.json"))


def test_tools_nobody_offers_are_refused_naming_those_offered(data_dir: Path,
                                                               weather: Any) -> None:
    tools = catalog(data_dir, weather)
    check_usable_settings({"tools": ["get_weather"]}, tools, None)
    with pytest.raises(UnknownToolError) as refused:
        check_usable_settings({"tools": ["get_weather", "nope"]}, tools, None)
    assert str(refused.value) == "Unknown tool name(s): nope. Available: get_weather."
    assert isinstance(refused.value, SettingsError)


def test_a_working_folder_inside_the_data_folder_is_refused_in_words(
        data_dir: Path, weather: Any, tmp_path: Path) -> None:
    tools = catalog(data_dir, weather)
    check_usable_settings({"workdir": str(tmp_path / "project")}, tools, None)
    with pytest.raises(BadWorkdirError, match=r"^workdir: .*inside the app's data folder"):
        check_usable_settings({"workdir": str(data_dir / "elsewhere")}, tools, None)


def test_only_the_keys_being_changed_are_checked(data_dir: Path, weather: Any) -> None:
    """A conversation whose MCP server is not running can still have its temperature changed."""
    tools = catalog(data_dir, weather)
    stored = {"tools": ["gone__tool"], "workdir": str(data_dir / "elsewhere"), "temperature": 0.2}
    check_usable_settings(stored, tools, None, changed=["temperature"])
    with pytest.raises(UnknownToolError):
        check_usable_settings(stored, tools, None, changed=["tools"])
    with pytest.raises(BadWorkdirError):
        check_usable_settings(stored, tools, None, changed=["workdir"])
