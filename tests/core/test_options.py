import pytest

from desktop_agent import AgentOptions, ConfigurationError, tool


@tool("echo", "Echo", {"text": str})
async def echo(args):
    return args["text"]


def test_defaults_match_the_seed_design():
    options = AgentOptions(model="m", base_url="http://localhost:1234/v1")
    assert (options.tools, options.max_turns, options.max_tokens, options.temperature,
            options.timeout, options.api_key, options.auto_execute_tools,
            options.max_tool_iterations, options.hooks) == (
        [], None, 4096, 0.7, 60.0, "not-needed", False, 5, None)


@pytest.mark.parametrize("kwargs, words", [
    ({"model": "", "base_url": "http://x"}, "model"),
    ({"model": "  ", "base_url": "http://x"}, "model"),
    ({"model": "m", "base_url": "localhost:1234"}, "http"),
    ({"model": "m", "base_url": "http://x", "max_turns": -1}, "max_turns"),
    ({"model": "m", "base_url": "http://x", "max_tokens": 0}, "max_tokens"),
    ({"model": "m", "base_url": "http://x", "max_tool_iterations": -2}, "max_tool_iterations"),
    ({"model": "m", "base_url": "http://x", "timeout": -1}, "timeout"),
    ({"model": "m", "base_url": "http://x", "temperature": 5}, "temperature"),
    ({"model": "m", "base_url": "http://x", "tools": [echo, echo]}, "duplicate"),
    ({"model": "m", "base_url": "http://x", "hooks": {"nope": []}}, "hook"),
])
def test_invalid_options_fail_at_construction(kwargs, words):
    with pytest.raises(ValueError, match=words):
        AgentOptions(**kwargs)


def test_configuration_error_is_a_value_error():
    assert issubclass(ConfigurationError, ValueError)


def test_none_means_server_default_or_unlimited():
    options = AgentOptions(model="m", base_url="https://x/v1/", max_tokens=None,
                           max_turns=None, temperature=None)
    assert options.base_url == "https://x/v1"


def test_api_key_not_in_repr():
    options = AgentOptions(model="m", base_url="http://x", api_key="sk-secret-value-123456")
    assert "sk-secret" not in repr(options)
