"""Over real uvicorn: a secret read by a tool, or echoed by the model server, never lands in
events, responses or the database."""

from __future__ import annotations

from server_harness import RunningApi

from desktop_agent.testing import script

TOKEN = "ghp_ServerSideToken_77aa01bb"
API_KEY = "sk-echoed-key-abcdef0123456789"


def _assert_nowhere(api: RunningApi, value: str) -> None:
    for response in api.responses:
        assert value not in response.text, response.request.url
    for path in api.database.parent.glob("*.sqlite3*"):
        assert value.encode() not in path.read_bytes(), path


def test_tool_results_and_server_errors_are_redacted_everywhere(
        api: RunningApi, model_server) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["read_file", "grep"])["id"]
    api.client.put(f"/conversations/{cid}/secrets/GITHUB_TOKEN", json={"value": TOKEN})
    workdir = api.workdir(cid)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "env.txt").write_text(f"GITHUB_TOKEN={TOKEN}\n")
    api.client.put(f"/conversations/{cid}/confirmation", json={"enabled": False})
    model_server.enqueue(script.tool_calls([("read_file", {"path": "env.txt"}),
                                            ("grep", {"pattern": "GITHUB"})]),
                         script.text("done"))
    api.client.post(f"/conversations/{cid}/run", json={"message": "read it"})
    api.wait_idle(cid)
    results = [e["data"]["content"] for e in api.events(cid, types="tool_result")]
    assert "GITHUB_TOKEN=[redacted]" in results[0] and "[redacted]" in results[1]
    api.client.get(f"/conversations/{cid}/messages")

    # a server that echoes the API key in a mid-stream error chunk
    model_server.api_key = API_KEY
    api.client.put(f"/conversations/{cid}/secrets/MODEL_KEY", json={"value": API_KEY})
    api.client.patch(f"/conversations/{cid}",
                     json={"settings": {"api_key_name": f"conv:{cid}:MODEL_KEY"}})
    model_server.enqueue(script.from_chunks([{"error": {"message": f"bad key {API_KEY}"}}]))
    last = api.events(cid)[-1]["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "again"})
    api.wait_idle(cid, after=last)
    error = [e for e in api.events(cid) if e["type"] == "error"][-1]["data"]
    assert "bad key [redacted]" in error["message"]
    api.client.get(f"/conversations/{cid}/events")
    _assert_nowhere(api, TOKEN)
    _assert_nowhere(api, API_KEY)


def test_fastapi_telemetry_stays_off_even_when_the_environment_asks_for_it(
        tmp_path, monkeypatch):
    """Request spans carry conversation ids and exception messages: a desktop app's
    server must not export them because another program set OpenTelemetry up."""
    from desktop_agent.server.app import create_app
    from desktop_agent.store import Store

    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    store = Store.open(tmp_path / "db.sqlite3")
    try:
        app = create_app(store, master_key="k" * 32)
        config = getattr(app, "_telemetry", None)
        if config is not None:  # FastAPI versions with native telemetry
            assert not any(config.get(key) for key in (
                "tracing", "metrics", "logs", "operation_spans", "auto_configure"))
            assert not app._native_telemetry.enabled()
    finally:
        store.close()
