"""Before any route reads a body: host names, the key, and body size, over real uvicorn."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_harness import MASTER_KEY, RunningApi, start_api

from desktop_agent.server.auth import StartupRefused, check_startup


def _send_big_body(base_url: str, path: str, headers: dict[str, str],
                   total: int) -> tuple[str, int]:
    """Send a ``total``-byte body slowly over a raw socket; return the answer's status
    line and how many body bytes went out before the server answered or closed."""
    host, port = base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {total}",
            *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    sock.sendall("\r\n".join(head).encode())
    sent = 0
    chunk = b"x" * 65536
    sock.setblocking(False)
    answer = b""
    try:
        while sent < total:
            try:
                answer += sock.recv(65536)
                if answer:
                    break
            except BlockingIOError:
                pass
            try:
                sent += sock.send(chunk)
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                break  # the server closed on us: it stopped reading
        sock.setblocking(True)
        sock.settimeout(10)
        while b"\r\n" not in answer:
            part = sock.recv(65536)
            if not part:
                break
            answer += part
    except OSError:
        pass
    finally:
        sock.close()
    return answer.split(b"\r\n", 1)[0].decode(errors="replace"), sent


@pytest.mark.parametrize("path", ["/conversations", "/conversations/x/files"])
def test_an_anonymous_huge_body_is_refused_before_it_is_read(api: RunningApi, path: str) -> None:
    status, sent = _send_big_body(api.base_url, path,
                                  {"Content-Type": "application/json"}, 200 * 1024 * 1024)
    assert status == "HTTP/1.1 401 Unauthorized"
    # neither parsed nor spooled: the server answered after at most a bounded discard
    assert sent < 32 * 1024 * 1024, f"the server read {sent} bytes before answering"


@pytest.fixture
def small_api(tmp_path: Path, data_dir: Path) -> Iterator[RunningApi]:
    running = start_api(tmp_path, body_limit=100_000, upload_limit=50_000)
    try:
        yield running
    finally:
        running.stop()
        running.store.close()


def test_every_route_caps_its_body_declared_or_chunked(small_api: RunningApi) -> None:
    cid = small_api.create()["id"]
    big = '{"title": "' + "t" * 200_000 + '"}'
    declared = small_api.client.post("/conversations", content=big,
                                     headers={"Content-Type": "application/json"})
    assert declared.status_code == 413 and declared.json()["code"] == "too_large"

    def pieces() -> Iterator[bytes]:  # no Content-Length: chunked transfer
        yield big.encode()

    chunked = small_api.client.post("/conversations", content=pieces(),
                                    headers={"Content-Type": "application/json"})
    assert chunked.status_code == 413, chunked.text
    assert "limit of 100000 bytes" in chunked.json()["error"]
    boundary = "guardboundary"
    upload = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"path\"\r\n\r\nbig.bin\r\n"
              f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
              f"filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
              ).encode() + b"z" * 300_000 + f"\r\n--{boundary}--\r\n".encode()

    def upload_pieces() -> Iterator[bytes]:
        for start in range(0, len(upload), 8192):
            yield upload[start:start + 8192]

    refused = small_api.client.post(
        f"/conversations/{cid}/files", content=upload_pieces(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert refused.status_code == 413, refused.text
    assert small_api.client.get(f"/conversations/{cid}/files").json()["entries"] == []
    # within the limits everything still works
    assert small_api.client.post("/conversations", json={"title": "small"}).status_code == 201


def test_no_auth_answers_only_loopback_host_names(tmp_path: Path, data_dir: Path) -> None:
    api = start_api(tmp_path, master_key=None)
    try:
        cid = api.create()["id"]
        port = api.base_url.rsplit(":", 1)[1]
        rebinding = httpx.post(f"{api.base_url}/conversations/{cid}/commands",
                               json={"command": "touch pwned"},
                               headers={"Host": f"attacker.example:{port}"})
        assert rebinding.status_code == 400 and rebinding.json()["code"] == "bad_host"
        assert not (api.workdir(cid) / "pwned").exists()
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
            ok = httpx.get(f"{api.base_url}/conversations", headers={"Host": host})
            assert ok.status_code == 200, host
    finally:
        api.stop()
        api.store.close()


def test_with_a_key_an_allow_list_of_host_names_applies(tmp_path: Path, data_dir: Path) -> None:
    api = start_api(tmp_path, allowed_hosts=["agent.internal"])
    try:
        headers = {"Authorization": f"Bearer {MASTER_KEY}"}
        other = httpx.get(f"{api.base_url}/conversations",
                          headers={**headers, "Host": "attacker.example"})
        assert other.status_code == 400
        listed = httpx.get(f"{api.base_url}/conversations",
                           headers={**headers, "Host": "agent.internal:8000"})
        assert listed.status_code == 200
    finally:
        api.stop()
        api.store.close()


def test_a_non_ascii_master_key_is_refused_at_start_up(data_dir: Path) -> None:
    with pytest.raises(StartupRefused, match="only printable ASCII"):
        check_startup("clé-secrète-0123456789", "127.0.0.1", False)
    env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir),
           "DESKTOP_AGENT_MASTER_KEY": "clé-secrète-0123456789"}
    done = subprocess.run([sys.executable, "-m", "desktop_agent", "serve", "--port", "1"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "HTTP header cannot carry" in done.stderr and "Traceback" not in done.stderr
    assert "secrète" not in done.stderr
