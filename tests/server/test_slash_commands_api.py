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
