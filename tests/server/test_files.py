"""Workdir files: upload, list, download, delete; traversal and symlinks refused; size limit."""

from __future__ import annotations

import os

import pytest
from server_harness import RunningApi, start_api


@pytest.fixture
def conv(api: RunningApi) -> str:
    return api.create()["id"]


def _upload(api: RunningApi, cid: str, path: str, content: bytes):
    return api.client.post(f"/conversations/{cid}/files", data={"path": path},
                           files={"file": ("upload.bin", content)})


def test_upload_list_download_delete(api: RunningApi, conv: str):
    made = _upload(api, conv, "notes/today.txt", b"buy milk\n")
    assert made.status_code == 201 and made.json() == {"path": "notes/today.txt", "size": 9}
    _upload(api, conv, "top.txt", b"top")
    root = api.client.get(f"/conversations/{conv}/files").json()
    assert [(e["name"], e["is_dir"]) for e in root["entries"]] == [("notes", True),
                                                                   ("top.txt", False)]
    inner = api.client.get(f"/conversations/{conv}/files", params={"path": "notes"}).json()
    assert inner["entries"][0]["path"] == "notes/today.txt" and inner["entries"][0]["size"] == 9
    got = api.client.get(f"/conversations/{conv}/files/content",
                         params={"path": "notes/today.txt"})
    assert got.status_code == 200 and got.content == b"buy milk\n"
    replaced = _upload(api, conv, "notes/today.txt", b"buy bread")
    assert replaced.json()["size"] == 9
    assert api.client.get(f"/conversations/{conv}/files/content",
                          params={"path": "notes/today.txt"}).content == b"buy bread"

    not_empty = api.client.delete(f"/conversations/{conv}/files", params={"path": "notes"})
    assert not_empty.status_code == 409
    assert api.client.delete(f"/conversations/{conv}/files",
                             params={"path": "top.txt"}).status_code == 204
    assert api.client.delete(f"/conversations/{conv}/files",
                             params={"path": "notes", "recursive": True}).status_code == 204
    assert api.client.get(f"/conversations/{conv}/files").json()["entries"] == []
    missing = api.client.get(f"/conversations/{conv}/files/content", params={"path": "top.txt"})
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


TRAVERSALS = ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "..", "~/x",
              "C:/Windows/win.ini", "..\\outside.txt", "ok/\x00.txt"]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_traversal_is_refused_everywhere(api: RunningApi, conv: str, tmp_path, path: str):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret outside")
    answers = [
        api.client.get(f"/conversations/{conv}/files/content", params={"path": path}),
        api.client.get(f"/conversations/{conv}/files", params={"path": path}),
        api.client.delete(f"/conversations/{conv}/files", params={"path": path}),
        _upload(api, conv, path, b"overwrite"),
    ]
    for answer in answers:
        assert answer.status_code in (400, 422), (path, answer.status_code, answer.text)
        assert "secret outside" not in answer.text
    assert outside.read_text() == "secret outside"


def test_symlinks_leading_out_are_refused(api: RunningApi, conv: str, tmp_path):
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "private.txt").write_text("private")
    _upload(api, conv, "inside.txt", b"inside")
    workdir = api.workdir(conv)
    os.symlink(outside_dir / "private.txt", workdir / "link.txt")
    os.symlink(outside_dir, workdir / "linkdir")
    os.symlink(workdir / "inside.txt", workdir / "ok-link.txt")
    for path in ("link.txt", "linkdir/private.txt"):
        got = api.client.get(f"/conversations/{conv}/files/content", params={"path": path})
        assert got.status_code == 400 and "private" not in got.text
        assert _upload(api, conv, path, b"overwritten").status_code == 400
        assert api.client.delete(f"/conversations/{conv}/files",
                                 params={"path": path}).status_code == 400
    assert api.client.get(f"/conversations/{conv}/files",
                          params={"path": "linkdir"}).status_code == 400
    assert (outside_dir / "private.txt").read_text() == "private"
    inside = api.client.get(f"/conversations/{conv}/files/content", params={"path": "ok-link.txt"})
    assert inside.content == b"inside"


def test_uploads_over_the_limit_are_refused_and_keep_the_old_file(tmp_path, data_dir):
    api = start_api(tmp_path, upload_limit=1000)
    try:
        cid = api.create()["id"]
        assert _upload(api, cid, "data.bin", b"x" * 1000).status_code == 201
        too_big = _upload(api, cid, "data.bin", b"y" * 1001)
        assert too_big.status_code == 413 and too_big.json()["code"] == "too_large"
        kept = api.client.get(f"/conversations/{cid}/files/content", params={"path": "data.bin"})
        assert kept.content == b"x" * 1000
        huge = _upload(api, cid, "huge.bin", b"z" * 200_000)
        assert huge.status_code == 413
        names = [e["name"] for e in api.client.get(f"/conversations/{cid}/files").json()["entries"]]
        assert names == ["data.bin"], "no partial or temporary file is left behind"
    finally:
        api.stop()
        api.store.close()
