"""Slash commands and skills over REST: listed, expanded and offered as in the window."""

from __future__ import annotations

from pathlib import Path

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_commands_are_listed_and_expanded(api: RunningApi) -> None:
    cid = api.create(model="m")["id"]
    folder = api.workdir(cid)
    write(folder / ".agents/commands/review.md",
          "---\ndescription: Review a file\n---\nReview $ARGUMENTS carefully.")
    write(folder / ".claude/commands/bad.md", "---\nnot: [closed\n---\nx")
    listed = api.client.get(f"/conversations/{cid}/slash-commands").json()
    kinds = {c["name"]: c["kind"] for c in listed["commands"]}
    assert kinds["review"] == "command"
    assert "bad" not in kinds and "not valid YAML" in listed["skipped"][0]
    got = api.client.post(f"/conversations/{cid}/slash-commands/expand",
                          json={"text": "/review main.py"})
    assert got.json()["message"] == "Review main.py carefully."
    missing = api.client.post(f"/conversations/{cid}/slash-commands/expand",
                              json={"text": "/nothing"})
    assert missing.status_code == 404 and missing.json()["code"] == "unknown_command"


def test_skills_are_listed_switched_off_and_offered(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    folder = api.workdir(cid)
    for name in ("one", "two"):
        write(folder / f".agents/skills/{name}/SKILL.md",
              f"---\nname: {name}\ndescription: The {name} skill.\n---\nBody of {name}.")
    patched = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"skills_off": ["two"]}})
    assert patched.status_code == 200, patched.text
    listed = api.client.get(f"/conversations/{cid}/skills").json()
    skills = listed["skills"]
    assert [(s["name"], s["enabled"], s["scope"]) for s in skills] == [
        ("one", True, "project"), ("two", False, "project")]
    assert all(s["tokens"] > 0 for s in skills)
    assert listed["prompt_tokens"] > skills[0]["tokens"]  # the heading, and "one" alone
    model_server.enqueue(script.text("Ok."))
    api.client.post(f"/conversations/{cid}/run", json={"message": "Hi"})
    api.wait_idle(cid)
    system = model_server.requests[0]["messages"][0]["content"]
    assert "- one: The one skill." in system and "two" not in system


def test_builtins_are_listed_and_compact_runs_over_rest(
        api: RunningApi, model_server: ScriptedServer) -> None:
    # REST lists the built-ins it runs (not /undo, /model... of the window), refuses to
    # expand one into a message, and /compact summarises through its own route.
    from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS

    def respond(body: dict) -> script.Script:
        if body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS:
            return script.text("Two questions about birds.")
        return script.text("An answer.")

    model_server.responder = respond
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=[],
                     context_length=8000)["id"]
    listed = api.client.get(f"/conversations/{cid}/slash-commands").json()["commands"]
    builtins = [c["name"] for c in listed if c["kind"] == "builtin"]
    assert builtins == ["compact", "help"]
    refused = api.client.post(f"/conversations/{cid}/slash-commands/expand",
                              json={"text": "/compact"})
    assert refused.status_code == 422 and "POST /conversations/{id}/compact" in \
        refused.json()["error"]
    early = api.client.post(f"/conversations/{cid}/compact")
    assert early.status_code == 409 and early.json()["code"] == "nothing_to_answer"
    after = 0
    for question in ("Do owls sleep?", "Do crows talk?"):
        started = api.client.post(f"/conversations/{cid}/run", json={"message": question})
        assert started.status_code == 202, started.text
        after = api.wait_idle(cid, after=after)["id"]
    got = api.client.post(f"/conversations/{cid}/compact")
    assert got.status_code == 200, got.text
    assert got.json()["compacted"] and got.json()["summary"] == "Two questions about birds."


def test_a_command_s_arguments_can_be_given_by_name(api: RunningApi) -> None:
    cid = api.create(model="m")["id"]
    write(api.workdir(cid) / ".agents/commands/compare.md",
          "---\nargument-hint: old new\n---\nCompare $1 with $2.")
    listed = api.client.get(f"/conversations/{cid}/slash-commands").json()["commands"]
    compare = next(c for c in listed if c["name"] == "compare")
    assert [a["name"] for a in compare["arguments"]] == ["old", "new"]
    got = api.client.post(f"/conversations/{cid}/slash-commands/expand", json={
        "text": "/compare", "values": {"old": "v1 draft", "new": "v2"}})
    assert got.json()["message"] == "Compare v1 draft with v2."
