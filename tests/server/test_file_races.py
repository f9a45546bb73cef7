"""REST file routes against a folder swapped for a symlink mid-request, FIFOs and long names."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from pathlib import Path

from server_harness import RunningApi

SECRET = "OUTSIDE-SECRET-CONTENT"
_libc = ctypes.CDLL(None, use_errno=True)


def _exchange(a: Path, b: Path) -> None:
    """renameat2(RENAME_EXCHANGE): swap two names atomically."""
    if _libc.renameat2(-100, bytes(a), -100, bytes(b), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 failed")


def _upload(api: RunningApi, cid: str, path: str, content: bytes):
    return api.client.post(f"/conversations/{cid}/files", data={"path": path},
                           files={"file": ("upload.bin", content)})


def test_a_folder_swapped_for_a_link_never_leads_a_route_outside(
        api: RunningApi, tmp_path: Path) -> None:
    cid = api.create()["id"]
    assert _upload(api, cid, "sub/f.txt", b"inside content").status_code == 201
    work = api.workdir(cid)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET)
    (outside / "only-outside.txt").write_text(SECRET)
    os.symlink(outside, work / "sublink")
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        while not stop.is_set():
            _exchange(work / "sub", work / "sublink")
            swaps[0] += 1
            time.sleep(0)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    texts: list[str] = []
    listings: list[str] = []
    try:
        for i in range(60):
            texts.append(api.client.get(f"/conversations/{cid}/files/content",
                                        params={"path": "sub/f.txt"}).text)
            listings.append(api.client.get(f"/conversations/{cid}/files",
                                           params={"path": "sub"}).text)
            texts.append(_upload(api, cid, f"sub/up-{i}.txt", b"uploaded").text)
            texts.append(api.client.delete(f"/conversations/{cid}/files",
                                           params={"path": "sub/only-outside.txt"}).text)
    finally:
        stop.set()
        swapper.join(10)
    assert swaps[0] > 20, "the swap loop hardly ran"
    assert any("inside content" in t for t in texts), "the routes never worked during the race"
    assert not [t for t in texts + listings if SECRET in t]
    assert not [t for t in listings if "only-outside" in t]
    assert any("f.txt" in t for t in listings)
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt", "only-outside.txt"]


def test_a_fifo_is_refused_and_the_server_keeps_answering(api: RunningApi) -> None:
    cid = api.create()["id"]
    work = api.workdir(cid)
    work.mkdir(parents=True, exist_ok=True)
    os.mkfifo(work / "pipe")
    started = time.monotonic()
    for _ in range(12):  # more than the worker threads: none may be left blocked
        got = api.client.get(f"/conversations/{cid}/files/content", params={"path": "pipe"})
        assert got.status_code == 400 and "FIFO" in got.json()["error"]
    assert time.monotonic() - started < 10
    assert api.client.get(f"/conversations/{cid}").status_code == 200
    listed = api.client.get(f"/conversations/{cid}/files").json()["entries"]
    assert [e["name"] for e in listed] == ["pipe"]


def test_a_name_over_255_bytes_is_a_400_with_a_sentence(api: RunningApi) -> None:
    cid = api.create()["id"]
    long_path = "folder/" + "n" * 256
    answers = [
        api.client.get(f"/conversations/{cid}/files/content", params={"path": long_path}),
        api.client.get(f"/conversations/{cid}/files", params={"path": long_path}),
        api.client.delete(f"/conversations/{cid}/files", params={"path": long_path}),
        _upload(api, cid, long_path, b"x"),
    ]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert "longer than 255 bytes" in answer.json()["error"]
