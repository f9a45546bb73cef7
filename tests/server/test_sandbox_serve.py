"""The sandbox round two, attacked through a real ``desktop-agent serve`` process.

Each test drives ``POST /conversations/{id}/commands`` over real HTTP against a
``serve`` subprocess, so the command runs under real bubblewrap exactly as a
script's would. The tests run as whoever runs pytest: CI runs them as root and
again as a normal user (``.ci/sandbox_as_user.sh``), because root is where the
escapes were.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx
import pytest
from server_harness import start_serve, stop_serve

from desktop_agent.core.tooling.builtin import BuiltinToolError, builtin_tools
from desktop_agent.session.settings.sandbox_settings import sandbox_policy
from desktop_agent.store import Store, write_export_file

KEY = "sandbox-serve-key-0123456789abcdef"


@pytest.fixture
def served(data_dir: Path, bubblewrap: None) -> Iterator[httpx.Client]:
    process, client = start_serve(data_dir, KEY)
    try:
        yield client
    finally:
        stop_serve(process, client)


def _command(client: httpx.Client, cid: str, command: str) -> dict:
    response = client.post(f"/conversations/{cid}/commands",
                           json={"command": command, "timeout": 60})
    assert response.status_code == 200, response.text
    result: dict = response.json()
    return result


def _new(client: httpx.Client, **settings: object) -> str:
    response = client.post("/conversations", json={"title": "sandbox", "settings": settings})
    assert response.status_code == 201, response.text
    cid: str = response.json()["id"]
    return cid


def test_kernel_settings_stay_read_only_and_the_command_is_not_root(
        served: httpx.Client) -> None:
    cid = _new(served)
    result = _command(served, cid, (
        "v=$(cat /proc/sys/kernel/core_uses_pid); "
        "echo $v > /proc/sys/kernel/core_uses_pid && echo sysctl-writable; "
        "for f in /proc/sysrq-trigger /proc/irq/*/smp_affinity; do "
        "  [ -e $f ] && (: > $f) 2>/dev/null && echo writable:$f; done; "
        "echo uid=$(id -u); grep CapEff /proc/self/status"))
    assert result["sandboxed"] is True
    out = result["stdout"]
    assert "sysctl-writable" not in out and "writable:" not in out, out
    assert "uid=0" not in out, out
    assert "CapEff:\t0000000000000000" in out, out
    # the host's setting is untouched and the command still ran
    assert os.path.exists("/proc/sys/kernel/core_uses_pid")


# -- the working-folder rule: imports, links swapped in later, the data folder --------


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``desktop-agent`` command line on ``data_dir``."""
    env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "desktop_agent", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _export_from_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           workdirs: list[str]) -> Path:
    """An export made by another installation (its own data folder and seal key)."""
    here = os.environ["DESKTOP_AGENT_DATA_DIR"]
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "elsewhere"))
    out = tmp_path / "hostile.json"
    with Store.open(tmp_path / "elsewhere.sqlite3") as source:
        ids = []
        for n, workdir in enumerate(workdirs):
            conv = source.create_conversation(f"chat {n}", {"workdir": workdir})
            source.add_message(conv.id, {"role": "user", "content": "ls"})
            ids.append(conv.id)
        write_export_file(source, out, ids)
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", here)
    return out


def _ids(client: httpx.Client) -> list[str]:
    listing = client.get("/conversations", params={"limit": 100}).json()
    items = listing["conversations"] if isinstance(listing, dict) else listing
    return [c["id"] for c in items]


def test_an_import_never_works_in_the_data_folder_or_the_folder_of_all_folders(
        served: httpx.Client, data_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = _export_from_elsewhere(tmp_path, monkeypatch,
                                     [str(data_dir), str(data_dir / "workdirs")])
    done = _cli(data_dir, "import", str(hostile))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("did not export; the conversation gets a folder of its own") == 2
    (data_dir / "config.json").write_text('{"mcpServers": {}}')
    for cid in _ids(served):
        out = _command(served, cid, "pwd; ls -A; cat config.json 2>&1; "
                                    "ls -A ../.. 2>&1")["stdout"]
        assert out.splitlines()[0] == str((data_dir / "workdirs" / cid).resolve()), out
        assert "mcpServers" not in out and "conversations.sqlite3" not in out, out


def test_a_folder_swapped_for_a_link_is_refused_at_use_not_followed(
        served: httpx.Client, data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    cid = _new(served, workdir=str(folder))
    assert _command(served, cid, "echo ran")["stdout"] == "ran\n"
    folder.rename(tmp_path / "moved")
    folder.symlink_to("/")
    refused = served.post(f"/conversations/{cid}/commands", json={"command": "ls /root"})
    assert refused.status_code == 409, refused.text
    assert "symbolic link" in refused.json()["error"]
    listing = served.get(f"/conversations/{cid}/files")
    assert listing.status_code == 409, listing.text
    # and a setting may not name a link, the data folder, or the folder of all folders
    for bad in (str(folder), str(data_dir), str(data_dir / "workdirs"),
                str(data_dir / "logs")):
        answer = served.post("/conversations", json={"title": "x",
                                                     "settings": {"workdir": bad}})
        assert answer.status_code == 422, (bad, answer.text)


def test_re_importing_our_own_export_keeps_the_folder_and_an_edited_one_does_not(
        served: httpx.Client, data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "chosen"
    folder.mkdir()
    _new(served, workdir=str(folder))
    exported = tmp_path / "mine.json"
    done = _cli(data_dir, "export", "--all", "-o", str(exported))
    assert done.returncode == 0, done.stderr
    done = _cli(data_dir, "import", str(exported))
    assert done.returncode == 0 and "Reset for safety" not in done.stderr, done.stderr
    kept = [served.get(f"/conversations/{cid}").json()["settings"].get("workdir")
            for cid in _ids(served)]
    assert kept == [str(folder), str(folder)]
    other = tmp_path / "other"
    other.mkdir()
    document = json.loads(exported.read_text())
    document["conversations"][0]["settings"]["workdir"] = str(other)
    exported.write_text(json.dumps(document))
    done = _cli(data_dir, "import", str(exported))
    assert "did not export; the conversation gets a folder of its own" in done.stderr


def test_file_tools_see_the_data_folder_as_absent_in_a_folder_that_holds_it(
        served: httpx.Client, data_dir: Path, tmp_path: Path) -> None:
    (data_dir / "config.json").write_text('{"mcpServers": {}}')
    cid = _new(served, workdir=str(tmp_path))  # the data folder lies inside it
    written = served.post(f"/conversations/{cid}/files", data={"path": "data/config.json"},
                          files={"file": ("x", b'{"mcpServers": {"evil": {}}}')})
    assert written.status_code in (400, 404), written.text
    assert "evil" not in (data_dir / "config.json").read_text()
    names = [e["name"] for e in served.get(f"/conversations/{cid}/files").json()["entries"]]
    assert "data" not in names, names
    read = served.get(f"/conversations/{cid}/files/content", params={"path": "data/config.json"})
    assert read.status_code in (400, 404), read.text
    out = _command(served, cid, "ls -A data; cat data/config.json 2>&1")["stdout"]
    assert "mcpServers" not in out


@pytest.fixture
def data_inside(data_dir: Path, tmp_path: Path) -> Path:
    """A working folder (``tmp_path``) that holds the data folder and a note."""
    (data_dir / "config.json").write_text('{"mcpServers": {}}')
    (tmp_path / "notes.txt").write_text("mine")
    return data_dir


async def test_the_models_file_tools_see_the_data_folder_as_absent(
        data_inside: Path, tmp_path: Path) -> None:
    data_dir = data_inside
    tools = {t.name: t for t in builtin_tools(tmp_path, sandbox=sandbox_policy({}))}
    for name, args in (("write_file", {"path": "data/config.json", "content": "{}"}),
                       ("read_file", {"path": "data/config.json"}),
                       ("list_dir", {"path": "data"})):
        with pytest.raises(BuiltinToolError, match="does not exist"):
            await tools[name].execute(args)
    assert (data_dir / "config.json").read_text() == '{"mcpServers": {}}'
    listed = str(await tools["list_dir"].execute({"path": "."}))
    assert "notes.txt" in listed and "data/" not in listed, listed
    found = str(await tools["glob"].execute({"pattern": "**/*.json"}))
    assert "config.json" not in found, found
    grep = str(await tools["grep"].execute({"pattern": "mcpServers"}))
    assert "config.json" not in grep, grep


# -- limits: memory, processes, file size, /tmp ---------------------------------------


def test_a_memory_hog_a_file_filler_and_a_full_tmp_end_with_a_sentence(
        served: httpx.Client) -> None:
    cid = _new(served, command_memory_mb=256, command_file_mb=8, command_tmp_mb=8)
    hog = _command(served, cid, "python3 -c 'b = bytearray(1 << 30); print(len(b))'")
    assert hog["exit_code"] != 0 and "out of memory" in hog["limit"], hog
    assert "256 MiB" in hog["limit"]
    filler = _command(served, cid, "head -c 64M /dev/zero > big; echo $?")
    assert "size limit of 8 MiB" in filler["limit"], filler
    size = _command(served, cid, "stat -c %s big")["stdout"].strip()
    assert int(size) <= 8 << 20
    tmp = _command(served, cid, "for i in 1 2 3 4; do head -c 3M /dev/zero > /tmp/f$i || break; "
                                "done; df -m /tmp | tail -1")
    assert "private /tmp holds 8 MiB" in tmp["limit"], tmp
    fine = _command(served, cid, "echo still fine")
    assert fine["stdout"] == "still fine\n" and fine["limit"] is None


def test_a_fork_bomb_is_bounded_and_other_conversations_stay_responsive(
        served: httpx.Client) -> None:
    bomb_cid = _new(served, command_processes=32)
    other_cid = _new(served)
    answers: dict[str, dict] = {}

    def bomb() -> None:
        answers["bomb"] = served.post(
            f"/conversations/{bomb_cid}/commands",
            json={"command": "b() { b | b & }; b; sleep 5", "timeout": 15}).json()

    thread = threading.Thread(target=bomb)
    thread.start()
    try:
        # while the bomb runs, another conversation's command is answered at once
        quick = _command(served, other_cid, "echo alive; ls /proc | grep -c '^[0-9]'")
        assert quick["stdout"].startswith("alive"), quick
        still_running = thread.is_alive()
    finally:
        thread.join(120)
    assert still_running, "the bomb ended before the other command ran; nothing was shown"
    result = answers["bomb"]
    assert "limit of 32 processes" in (result["limit"] or ""), result


# -- say what is true ------------------------------------------------------------------


def test_the_api_reports_the_sandbox_that_applies_per_conversation(
        served: httpx.Client, data_dir: Path, tmp_path: Path) -> None:
    here = _new(served)
    status = served.get(f"/conversations/{here}").json()["sandbox"]
    capped = status["processes_capped"]  # False where no process cap holds (then said)
    assert status == {"level": "workdir", "sandboxed": True,
                      "label": "Sandboxed" if capped else "Sandboxed, processes not capped",
                      "detail": status["detail"], "processes_capped": capped}
    off = served.get(f"/conversations/{_new(served, sandbox='off')}").json()["sandbox"]
    assert off["sandboxed"] is False and off["label"] == "No sandbox"
    # a server whose PATH has no bubblewrap says so, and how to install it
    empty = tmp_path / "no-bwrap-bin"
    empty.mkdir()
    process, bare = start_serve(data_dir, KEY, extra_env={"PATH": str(empty)})
    try:
        status = bare.get(f"/conversations/{here}").json()["sandbox"]
        assert status["sandboxed"] is False
        assert status["label"] == "No sandbox: bubblewrap is not installed"
        assert "apt-get install bubblewrap" in status["detail"]
        refused = bare.post(f"/conversations/{here}/commands", json={"command": "true"})
        assert refused.status_code == 409 and "bubblewrap" in refused.json()["error"]
    finally:
        stop_serve(process, bare)


def test_secrets_are_redacted_also_encoded_wrapped_or_split_by_a_colour_escape(
        served: httpx.Client) -> None:
    secret = "ghp_Sandbox+Round/Two=0123456789abcdef"
    cid = _new(served)
    stored = served.put(f"/conversations/{cid}/secrets/TOKEN", json={"value": secret})
    assert stored.status_code in (200, 201, 204), stored.text
    out = _command(served, cid, (
        'printf %s "$TOKEN" | base64 -w0; echo; '
        'printf "user:%s" "$TOKEN" | base64 -w0; echo; '
        'printf %s "$TOKEN" | base64 -w0 | tr "+/" "-_"; echo; '
        'python3 -c "import os, urllib.parse as u; '
        "print(u.quote(os.environ['TOKEN'], safe=''), u.quote_plus(os.environ['TOKEN']))\"; "
        "echo plain=$TOKEN; "
        'printf %s "$TOKEN" | xxd -p; '
        r'printf "coloured=%s\e[1;31m%s\e[0m!\n" "${TOKEN:0:9}" "${TOKEN:9}"; '
        'printf %s "$TOKEN" | base64 -w 20; echo'))["stdout"]
    encodings = [base64.b64encode(secret.encode()).decode(),
                 base64.b64encode(f"user:{secret}".encode()).decode()[8:-8],
                 base64.urlsafe_b64encode(secret.encode()).decode().rstrip("="),
                 quote(secret, safe=""), quote_plus(secret), secret, secret.encode().hex(),
                 secret[:12]]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    for form in encodings:
        assert form not in plain and form not in plain.replace("\n", ""), (form, out)
    assert out.count("[secret TOKEN redacted (base64)]") == 4, out
    assert out.count("[secret TOKEN redacted (URL-encoded)]") == 2, out
    assert "plain=[secret TOKEN redacted]" in out
    assert "[secret TOKEN redacted (hex)]" in out
    assert "coloured=[secret TOKEN redacted]" in plain and "!" in plain


def test_a_link_planted_for_an_import_leads_nowhere(
        served: httpx.Client, data_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the attack: one conversation plants `x -> /`, another works in `…/x`
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "x").symlink_to("/")
    hostile = _export_from_elsewhere(tmp_path, monkeypatch, [str(planted / "x")])
    assert _cli(data_dir, "import", str(hostile)).returncode == 0
    # and our own export of a folder that was swapped for a link after the export
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    _new(served, workdir=str(chosen))
    mine = tmp_path / "mine.json"
    assert _cli(data_dir, "export", "--all", "-o", str(mine)).returncode == 0
    chosen.rename(tmp_path / "chosen-away")
    chosen.symlink_to("/")
    done = _cli(data_dir, "import", str(mine))
    assert "through a symbolic link" in done.stderr, done.stderr
    for cid in _ids(served):
        settings = served.get(f"/conversations/{cid}").json()["settings"]
        if settings.get("workdir") == str(chosen):
            continue  # the original conversation: refused at use (tested above)
        out = _command(served, cid, "pwd; ls /root /home 2>&1 | head -3")["stdout"]
        assert out.splitlines()[0] == str((data_dir / "workdirs" / cid).resolve()), out
