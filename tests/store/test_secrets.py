"""API keys: the real Secret Service, the no-keyring fallback, and a planted-key scan."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
import pytest

from desktop_agent.appdata import secrets
from desktop_agent.cli import transfer as cli_command
from desktop_agent.store import (
    SecretInSettingsError,
    Store,
    conversation_to_markdown,
    write_export_file,
)


def test_without_a_keyring_keys_last_the_session_and_never_touch_disk(
    no_keyring: None, data_dir: Path
) -> None:
    value = "no-backend-" + uuid.uuid4().hex
    status = secrets.keyring_status()
    assert status.available is False
    assert "this session only" in status.message
    assert "no system keyring" in status.message

    assert secrets.set_secret("api:Ollama", value) is False
    assert secrets.get_secret("api:Ollama") == value
    assert secrets.list_secret_names() == ["api:Ollama"]
    assert secrets.list_secret_names(prefix="conv:") == []
    for file in data_dir.rglob("*") if data_dir.exists() else []:
        assert value.encode() not in file.read_bytes()

    secrets.delete_secret("api:Ollama")
    assert secrets.get_secret("api:Ollama") is None
    assert secrets.list_secret_names() == []


class _FileKeyring(keyring.backend.KeyringBackend):
    """A backend that would keep keys in a plain file (like keyrings.alt's PlaintextKeyring)."""

    priority = 1  # type: ignore[assignment]
    folder: Path

    def set_password(self, service: str, username: str, password: str) -> None:
        (self.folder / "keys.txt").write_text(f"{service}/{username}={password}")

    def get_password(self, service: str, username: str) -> str | None:
        return None

    def delete_password(self, service: str, username: str) -> None:
        pass


_FileKeyring.__name__ = "PlaintextKeyring"


def test_a_plaintext_file_keyring_is_not_used(
    restore_keyring: None, data_dir: Path, tmp_path: Path
) -> None:
    backend = _FileKeyring()
    backend.folder = tmp_path
    keyring.set_keyring(backend)
    assert secrets.set_secret("api:x", "plain-value-1234") is False
    assert not (tmp_path / "keys.txt").exists()
    assert "stores files on disk" in secrets.keyring_status().message
    assert secrets.get_secret("api:x") == "plain-value-1234"


class _LockedKeyring(keyring.backend.KeyringBackend):
    """A keyring that exists but refuses (a locked collection, a dead D-Bus)."""

    priority = 1  # type: ignore[assignment]

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("Failed to unlock the collection!")

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("Failed to unlock the collection!")

    def delete_password(self, service: str, username: str) -> None:
        raise keyring.errors.KeyringLocked("Failed to unlock the collection!")


def test_a_keyring_that_refuses_falls_back_to_the_session(
    restore_keyring: None, data_dir: Path
) -> None:
    keyring.set_keyring(_LockedKeyring())
    value = "locked-" + uuid.uuid4().hex
    assert secrets.set_secret("api:vLLM", value) is False
    assert secrets.get_secret("api:vLLM") == value
    status = secrets.keyring_status()
    assert status.available is False
    assert "refused" in status.message and "this session only" in status.message
    assert value not in status.message
    for file in data_dir.rglob("*") if data_dir.exists() else []:
        assert value.encode() not in file.read_bytes()
    secrets.delete_secret("api:vLLM")
    assert secrets.get_secret("api:vLLM") is None


def test_names_must_be_text(no_keyring: None) -> None:
    with pytest.raises(ValueError, match="name"):
        secrets.set_secret("", "v")
    with pytest.raises(ValueError, match="value"):
        secrets.set_secret("api:x", "")


def test_real_secret_service_keeps_the_key_across_sessions(
    secret_service: None, data_dir: Path
) -> None:
    value = "ss-" + uuid.uuid4().hex
    name = f"api:LM Studio {uuid.uuid4().hex[:6]}"
    status = secrets.keyring_status()
    assert status.available is True, status.message
    assert "system keyring" in status.message

    assert secrets.set_secret(name, value) is True
    # A new vault (as after a restart) has no session memory: the value comes from the keyring.
    fresh = secrets.SecretVault()
    assert fresh.get(name) == value
    assert name in fresh.names()
    index = (data_dir / "secret-names.json").read_text(encoding="utf-8")
    assert name in index and value not in index

    tool = shutil.which("secret-tool")
    if tool:  # the libsecret command line sees the same item
        looked_up = subprocess.run(
            [tool, "lookup", "service", secrets.SERVICE_NAME, "username", name],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert looked_up.stdout.strip() == value

    secrets.delete_secret(name)
    assert secrets.SecretVault().get(name) is None
    assert name not in secrets.list_secret_names()


@pytest.fixture(params=["secret_service", "no_keyring"])
def any_keyring(request: pytest.FixtureRequest) -> str:
    request.getfixturevalue(request.param)
    return str(request.param)


def _scan(paths: list[Path], values: list[str]) -> list[str]:
    found = []
    for path in paths:
        data = path.read_bytes()
        found += [f"{path.name} holds {v[:6]}…" for v in values if v.encode() in data]
    return found


def test_a_planted_key_is_nowhere_on_disk_or_in_exports(
    any_keyring: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shaped = "sk-planted" + uuid.uuid4().hex
    plain = "planted" + uuid.uuid4().hex  # no recognisable shape at all
    persisted = secrets.set_secret("api:LM Studio", shaped)
    secrets.set_secret("conv:1:GITHUB_TOKEN", plain)
    assert persisted is (any_keyring == "secret_service")

    store = Store.open()
    conv = store.create_conversation(
        "uses a key", {"api_key_name": "api:LM Studio", "model": "m", "base_url": "http://x/v1"}
    )
    store.add_message(conv.id, {"role": "user", "content": "hello"})
    store.add_message(
        conv.id,
        {"role": "assistant", "content": "hi"},
        metadata={
            "request": {"headers": {"Authorization": f"Bearer {shaped}"}},
            "github_token": plain,
            "note": f"sent with {shaped}",
        },
    )
    with pytest.raises(SecretInSettingsError) as refused:
        store.update_conversation(conv.id, settings={"api_key": plain})
    assert plain not in str(refused.value)
    with pytest.raises(SecretInSettingsError):
        store.set_setting("token", plain)
    store.set_setting("open_tabs", [conv.id])

    # Someone pasted a key into a chat; the chat is theirs, but exports blank it.
    pasted_db = tmp_path / "pasted.sqlite3"
    pasted_store = Store.open(pasted_db)
    pasted = pasted_store.create_conversation("pasted")
    pasted_store.add_message(pasted.id, {"role": "user", "content": f"my keys: {plain} {shaped}"})

    outputs = tmp_path / "out"
    outputs.mkdir()
    write_export_file(store, outputs / "all.json")
    write_export_file(pasted_store, outputs / "pasted.json")
    (outputs / "chat.md").write_text(conversation_to_markdown(store, conv.id))
    (outputs / "pasted.md").write_text(conversation_to_markdown(pasted_store, pasted.id))
    parser = argparse.ArgumentParser()
    cli_command.register(parser.add_subparsers())
    args = parser.parse_args(["export", "--all", "--database", str(pasted_db)])
    assert args.handler(args) == 0
    (outputs / "cli-stdout.json").write_text(capsys.readouterr().out)
    assert "[redacted]" in (outputs / "pasted.json").read_text()
    assert json.loads((outputs / "cli-stdout.json").read_text())["conversations"]

    # Scan while the WAL is live, and again after closing.
    live = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.name.endswith("-wal") for p in live)
    assert _scan(live, [shaped, plain]) == []
    assert _scan(list(outputs.iterdir()), [shaped, plain]) == []
    store.close()
    pasted_store.close()
    assert _scan([p for p in data_dir.rglob("*") if p.is_file()], [shaped, plain]) == []
    secrets.delete_secret("api:LM Studio")
    secrets.delete_secret("conv:1:GITHUB_TOKEN")


def test_a_fresh_process_without_a_keyring_says_so(tmp_path: Path) -> None:
    """The headless-Linux start-up path, in a new interpreter as the app would run."""
    import os
    import sys

    env = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    env["DESKTOP_AGENT_DATA_DIR"] = str(tmp_path / "data")
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    script = (
        "from desktop_agent.appdata import secrets\n"
        "print(secrets.set_secret('api:x', 'fresh-process-value'))\n"
        "print(secrets.get_secret('api:x'))\n"
        "print(secrets.keyring_status().message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    persisted, value, message = done.stdout.splitlines()
    assert (persisted, value) == ("False", "fresh-process-value")
    assert "this session only" in message
    for file in (tmp_path / "data").rglob("*"):
        assert b"fresh-process-value" not in file.read_bytes()
