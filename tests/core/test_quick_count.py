"""The quick token guess stays close to the shipped tokenizer's count, without loading it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desktop_agent.core.context.quick_count import quick_count_text, quick_estimate_tokens
from desktop_agent.core.context.tokens import count_text_tokens, estimate_tokens

REPO = Path(__file__).resolve().parents[2]


def _ratio(texts: list[str]) -> float:
    return sum(quick_count_text(t) for t in texts) / sum(count_text_tokens(t) for t in texts)


@pytest.mark.parametrize(("kind", "pattern"), [
    ("python code", "desktop_agent/core/**/*.py"),
    ("markdown prose", "docs/**/*.md"),
    ("json", "desktop_agent/**/*.json"),
])
def test_english_code_and_json_are_guessed_within_twelve_percent(kind: str, pattern: str) -> None:
    texts = [path.read_text(encoding="utf-8") for path in sorted(REPO.glob(pattern))]
    assert texts, f"no {kind} files to compare"
    assert 0.88 <= _ratio(texts) <= 1.12, kind


@pytest.mark.parametrize("sentence", [
    "Bonjour, comment ça va ? L'été dernier, nous sommes allés à la plage près de Marseille.",
    "Die Straßenbahn fährt heute später, weil die Brücke über den Fluss repariert wird.",
    "Привет, как дела? Я хотел бы узнать, где находится библиотека.",
    "你好，我想知道图书馆在哪里。这个程序可以帮助你写代码。",
    "こんにちは、図書館はどこですか？このプログラムはコードを書くのに役立ちます。",
], ids=["french", "german", "russian", "chinese", "japanese"])
def test_other_scripts_are_guessed_within_a_quarter(sentence: str) -> None:
    assert 0.75 <= _ratio([sentence * 5]) <= 1.25


def test_a_conversation_with_tools_is_guessed_like_the_tokenizer_counts_it() -> None:
    schema = {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file from the working folder.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}}
    messages = [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": "What does the README say about installing?"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "README.md"})}}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": (REPO / "README.md").read_text(encoding="utf-8")[:6000]},
        {"role": "assistant", "content": "Run the two commands at the top of the README."},
    ]
    exact = estimate_tokens(messages, tools=[schema])
    assert abs(quick_estimate_tokens(messages, tools=[schema]) - exact) <= 0.12 * exact
    assert quick_estimate_tokens([]) == 0 == estimate_tokens([])
