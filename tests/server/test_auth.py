"""Every route but GET /alive needs the master key; the server refuses unsafe start-ups."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import httpx
import pytest
from server_harness import RunningApi, free_socket, start_api

from desktop_agent.server.auth import StartupRefused, check_startup


def _routes(spec: dict) -> list[tuple[str, str]]:
    return [(method.upper(), path) for path, item in spec["paths"].items() for method in item]


def test_openapi_declares_bearer_security_on_every_route_but_the_probes(api: RunningApi):
    spec = api.client.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["MasterKey"] == {"type": "http", "scheme": "bearer",
                                    "description": schemes["MasterKey"]["description"]}
    for method, path in _routes(spec):
        operation = spec["paths"][path][method.lower()]
        if path in ("/alive", "/ready"):  # liveness and readiness, for load balancers
            assert "security" not in operation
        else:
            assert operation["security"] == [{"MasterKey": []}], (method, path)


def test_every_route_without_a_key_or_with_a_wrong_key_is_401(api: RunningApi, model_server):
    spec = api.client.get("/openapi.json").json()
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    routes = _routes(spec)
    assert len(routes) >= 20
    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Basic abc"}):
        with httpx.Client(base_url=api.base_url, timeout=10, headers=headers) as anonymous:
            for method, path in routes:
                if path in ("/alive", "/ready"):
                    continue
                url = re.sub(r"\{conversation_id\}", cid, path)
                url = re.sub(r"\{[a-z_]+\}", "X_NAME", url)
                answer = anonymous.request(method, url)
                assert answer.status_code == 401, (method, path, answer.text)
                assert answer.json()["code"] == "unauthorized"
                assert answer.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{api.base_url}/openapi.json").status_code == 401
    for docs in ("/docs", "/redoc"):  # not served: refused before routing, even
        assert httpx.get(f"{api.base_url}{docs}").status_code == 401
        keyed = api.client.get(docs)
        assert keyed.status_code == 404
    alive = httpx.get(f"{api.base_url}/alive")
    assert alive.status_code == 200 and alive.json() == {"status": "ok", "service": "desktop-agent"}
    # nothing happened to the conversation while the anonymous calls were refused
    assert api.client.get(f"/conversations/{cid}/messages").json()["messages"] == []


def test_no_auth_mode_serves_without_a_key(tmp_path, data_dir):
    api = start_api(tmp_path, master_key=None)
    try:
        assert httpx.get(f"{api.base_url}/conversations").status_code == 200
    finally:
        api.stop()
        api.store.close()


@pytest.mark.parametrize(("key", "host", "no_auth", "allowed"), [
    ("k" * 32, "0.0.0.0", False, True),
    (None, "127.0.0.1", False, False),
    (None, "127.0.0.1", True, True),
    (None, "::1", True, True),
    (None, "localhost", True, True),
    (None, "0.0.0.0", True, False),
    ("k" * 32, "192.168.1.5", True, False),
])
def test_startup_rules(key, host, no_auth, allowed):
    if allowed:
        check_startup(key, host, no_auth)
    else:
        with pytest.raises(StartupRefused):
            check_startup(key, host, no_auth)


def _serve(data_dir, *args: str, key: str | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DESKTOP_AGENT_MASTER_KEY"}
    env["DESKTOP_AGENT_DATA_DIR"] = str(data_dir)
    if key:
        env["DESKTOP_AGENT_MASTER_KEY"] = key
    return subprocess.Popen([sys.executable, "-m", "desktop_agent", "serve", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_serve_command_refuses_to_start_without_a_key(data_dir):
    process = _serve(data_dir, "--port", "1", key=None)
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "DESKTOP_AGENT_MASTER_KEY" in err and "Traceback" not in err
    process = _serve(data_dir, "--no-auth", "--host", "0.0.0.0", key=None)
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0 and "loopback" in err and "Traceback" not in err


def test_serve_command_serves_the_api_with_the_key(data_dir):
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    key = "subprocess-key-abcdef0123456789"
    process = _serve(data_dir, "--port", str(port), key=key)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/alive", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/conversations"
        # /alive answers as soon as the port is open; the API a moment later (the first
        # request waits for it: long on a busy machine, hence no short timeout).
        assert httpx.get(url, timeout=60).status_code == 401
        made = httpx.post(url, json={"title": "from serve"},
                          headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert made.status_code == 201
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert key not in err
    assert (data_dir / "conversations.sqlite3").exists()


def test_registering_the_serve_command_imports_nothing_heavy():
    code = ("import argparse, sys\n"
            "import desktop_agent.server.cli_command as c\n"
            "c.register(argparse.ArgumentParser().add_subparsers())\n"
            "heavy = [m for m in ('fastapi', 'uvicorn', 'starlette', 'pydantic', 'openai')"
            " if m in sys.modules]\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]"
