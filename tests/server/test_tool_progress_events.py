"""REST events carry a tool's progress and the content meant for the person only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server_harness import start_api

from desktop_agent.core.tooling.output import ToolOutput
from desktop_agent.core.tooling.progress import report_progress
from desktop_agent.core.tooling.tools import tool
from desktop_agent.testing import script


@tool("long_job", "A job that reports progress", {})
async def long_job(args: dict[str, Any]) -> ToolOutput:
    for step in (1, 2):
        report_progress(step, 2, f"step {step}")
    return ToolOutput("job finished", user_text="Your report is ready.")


def test_progress_and_person_only_content_as_events(tmp_path: Path, data_dir: Path,
                                                    model_server: Any) -> None:
    api = start_api(tmp_path, extra_tools=[long_job])
    try:
        model_server.enqueue(script.tool_calls([("long_job", {})], ids=["c1"]),
                             script.text("All done."))
        cid = api.create(base_url=model_server.base_url, model="m", tools=["long_job"],
                         confirm_tools=False)["id"]
        api.client.post(f"/conversations/{cid}/run", json={"message": "Run the job"})
        api.wait_idle(cid)
        events = api.events(cid)
        progress = [e["data"] for e in events if e["type"] == "tool_progress"]
        assert [(p["tool_use_id"], p["progress"], p["total"], p["message"])
                for p in progress] == [("c1", 1.0, 2.0, "step 1"), ("c1", 2.0, 2.0, "step 2")]
        [result] = [e["data"] for e in events if e["type"] == "tool_result"]
        assert result["content"] == "job finished"
        assert result["user_content"] == "Your report is ready."
        assert "Your report is ready" not in str(model_server.requests[-1])
    finally:
        api.stop()
        api.store.close()
