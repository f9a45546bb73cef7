"""Asking the model whether a tool fits before the call grammar applies (``tool_decision``).

Over real HTTP: the scripted server plays a grammar server that answers OpenAI's
``logprobs`` fields. Each decision is two one-token requests (the request itself
and an empty "N/A" one, whose leaning is taken out); the turn's own request
follows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from constrained_replies import branches, text_of

from desktop_agent import Client, ToolUseError, tool
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _forget_modes() -> Any:
    yield
    tool_call_mode.forget()


def toolbox(ran: list[dict[str, Any]]) -> list[Any]:
    @tool("get_weather", "The weather forecast for a city.",
          {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    def get_weather(args: dict[str, Any]) -> str:
        ran.append({"get_weather": dict(args)})
        return "sunny"

    @tool("stock_ticker", "The latest stock price of a company.",
          {"type": "object", "properties": {"company": {"type": "string"}},
           "required": ["company"]})
    def stock_ticker(args: dict[str, Any]) -> str:
        ran.append({"stock_ticker": dict(args)})
        return "12"

    return [get_weather, stock_ticker]


def leaning(yes: float, no: float) -> script.Script:
    """A one-token reply whose first token's options are "Yes" and "No" at these log-probs."""
    top = [{"token": "The", "logprob": -0.5}, {"token": "Yes", "logprob": yes},
           {"token": "No", "logprob": no}]
    return script.from_chunks([{
        "id": "d", "object": "chat.completion.chunk", "model": "test-model",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "The"},
                     "logprobs": {"content": [{"token": "The", "logprob": -0.5,
                                               "top_logprobs": top}]},
                     "finish_reason": "length"}]}])


async def converse(server: Any, make_options: Any, prompts: list[str]
                   ) -> tuple[list[dict[str, Any]], list[Any]]:
    ran: list[dict[str, Any]] = []
    options = make_options(tools=toolbox(ran), auto_execute_tools=True, max_turns=2,
                           constrained_tool_calls=True, tool_decision=True,
                           system_prompt="You help with trips.")
    items: list[Any] = []
    async with Client(options) as client:
        for prompt in prompts:
            await client.query(prompt)
            items += [item async for item in client.receive_messages()]
    return ran, items


async def test_the_decision_is_two_one_token_requests_about_the_tools_named(
        server: Any, make_options: Any) -> None:
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Lyon"}})
    server.enqueue(leaning(-1.0, -1.0), leaning(-0.5, -1.5),  # "N/A", then the request
                   script.text(call), script.text('{"answer": "Sunny in Lyon."}'))
    ran, items = await converse(server, make_options, ["Get the weather forecast in Lyon."])
    blank, asked, turn, after_result = server.requests
    for request in (blank, asked):
        assert request["max_tokens"] == 1
        assert request["logprobs"] is True and request["top_logprobs"] == 20
        assert "response_format" not in request and "tools" not in request
        system, question = request["messages"]
        # the person's own system prompt, not the call shapes of the turn's
        assert system == {"role": "system", "content": "You help with trips."}
        # the tools the request names (stock_ticker shares no word), with what they do
        assert "- get_weather: The weather forecast for a city." in question["content"]
        assert "stock_ticker" not in question["content"]
    assert "Request: N/A" in blank["messages"][1]["content"]
    assert "Request: Get the weather forecast in Lyon." in asked["messages"][1]["content"]
    # "Yes" (calibrated): the call grammar applies as it would without the decision
    assert branches(turn) == ["answer", "get_weather"]
    assert ran == [{"get_weather": {"city": "Lyon"}}]
    assert text_of(items) == "Sunny in Lyon."
    assert "logprobs" not in turn and "logprobs" not in after_result


async def test_no_tool_fitting_gets_an_answer_without_the_call_grammar(
        server: Any, make_options: Any) -> None:
    # The model leans to "Yes" by habit (its "N/A" leaning); this request pulls it
    # towards "No" more than the empty one does.
    server.enqueue(leaning(-0.4, -1.6), leaning(-0.9, -1.2),
                   script.text('{"answer": "get_weather cannot tell; it is about 20 °C."}'))
    ran, items = await converse(server, make_options,
                                ["What is the usual weather forecast error in degrees?"])
    assert len(server.requests) == 3  # the answer naming a tool is not asked again for calls
    assert branches(server.requests[2]) == ["answer"]
    assert ran == []
    assert text_of(items) == "get_weather cannot tell; it is about 20 °C."


async def test_the_calibration_is_asked_once_per_set_of_tools(server: Any,
                                                              make_options: Any) -> None:
    server.enqueue(leaning(-1.0, -1.0), leaning(-2.0, -0.5), script.text('{"answer": "a"}'),
                   leaning(-2.0, -0.4), script.text('{"answer": "b"}'))
    ran, items = await converse(server, make_options, [
        "Tell me a weather forecast joke.", "Another weather forecast joke."])
    questions = [r["messages"][-1]["content"] for r in server.requests if "logprobs" in r]
    assert len(questions) == 3 and "Request: N/A" in questions[0]
    assert [branches(r) for r in server.requests if "response_format" in r] == [
        ["answer"], ["answer"]]
    assert (ran, text_of(items)) == ([], "ab")


@pytest.mark.parametrize("refusal", [
    script.error(400, "logprobs is not supported by this model"),
    script.text("Yes"),  # a server that ignores the fields: no log-probabilities
], ids=["refused", "no-logprobs"])
async def test_a_server_that_cannot_decide_gets_todays_request_and_no_error(
        server: Any, make_options: Any, refusal: script.Script) -> None:
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}})
    server.enqueue(refusal, script.text(call), script.text('{"answer": "Snow."}'),
                   script.text('{"answer": "Rain."}'))
    ran, items = await converse(server, make_options, ["Get the weather forecast in Oslo.",
                                                       "And the weather forecast in Bergen?"])
    assert not [i for i in items if isinstance(i, ToolUseError)]
    assert text_of(items) == "Snow.Rain."
    assert ran == [{"get_weather": {"city": "Oslo"}}]
    # asked once; the turn went on as without the decision, and it is not asked again
    assert ["logprobs" in r for r in server.requests] == [True, False, False, False]
    assert branches(server.requests[1]) == ["answer", "get_weather"]
