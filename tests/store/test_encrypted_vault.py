"""Secrets sealed in a real PostgreSQL database: what ``serve --database`` keeps them in.

The vault sits behind :mod:`desktop_agent.appdata.secrets`' functions, so the session
layer's conversation secrets, the bash tool's environment and export redaction read
from it unchanged. The database (and a dump of it) holds names and ciphertext only.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_agent.appdata import secrets
from desktop_agent.appdata.encrypted_vault import EncryptedVault
from desktop_agent.appdata.secret_cipher import (
    MAKE_KEY_COMMAND,
    SECRET_KEY_VARIABLE,
    SecretCipher,
    SecretKeyError,
    WrongSecretKeyError,
    load_secret_key,
    new_secret_key,
)
from desktop_agent.session import conversation_environment, set_conversation_secret
from desktop_agent.store import Store, StoreError

TOKEN = "ghp_SealedTokenValue_91c2e7ab"


def _vault(store: Store, key: str) -> EncryptedVault:
    return EncryptedVault(store, SecretCipher(load_secret_key(None, {SECRET_KEY_VARIABLE: key})),
                          store.location)


@pytest.fixture
def pg_store(postgres_url: str) -> Iterator[Store]:
    with Store.open(postgres_url) as store:
        yield store


def test_values_are_sealed_in_the_database_and_open_with_the_key(
    pg_store: Store, postgres_cluster, postgres_url: str,
) -> None:
    vault = _vault(pg_store, new_secret_key())
    vault.check_key()
    assert vault.set("conv:c1:GITHUB_TOKEN", TOKEN) is True
    vault.set("api:LM Studio", "lm-studio-key-5521")
    assert vault.get("conv:c1:GITHUB_TOKEN") == TOKEN
    assert vault.get("conv:c1:OTHER") is None
    assert vault.names("conv:c1:") == ["conv:c1:GITHUB_TOKEN"]
    assert vault.names() == ["api:LM Studio", "conv:c1:GITHUB_TOKEN"]
    assert vault.known_values() == [TOKEN, "lm-studio-key-5521"]
    assert vault.status().available

    dump = postgres_cluster.dump(postgres_url)
    assert "conv:c1:GITHUB_TOKEN" in dump  # names stay readable
    for leak in (TOKEN, base64.b64encode(TOKEN.encode()).decode(),
                 base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("="),
                 "lm-studio-key-5521"):
        assert leak not in dump

    vault.delete("conv:c1:GITHUB_TOKEN")
    vault.delete("conv:c1:GITHUB_TOKEN")  # a missing name is not an error
    assert vault.names("conv:") == []
    assert "conv:c1:GITHUB_TOKEN" not in postgres_cluster.dump(postgres_url)


def test_another_key_is_refused_in_words_and_a_moved_row_does_not_open(
    pg_store: Store, postgres_url: str,
) -> None:
    first = _vault(pg_store, new_secret_key())
    first.check_key()
    first.set("conv:a:TOKEN", TOKEN)

    with Store.open(postgres_url) as other_replica:
        wrong = _vault(other_replica, new_secret_key())
        with pytest.raises(WrongSecretKeyError) as refused:
            wrong.check_key()
    message = str(refused.value)
    assert "does not open the secrets stored in" in message
    assert "same key as the others" in message and TOKEN not in message

    # A row copied under another conversation's name (to print it there) opens as nothing.
    pg_store.put_sealed_secret("conv:b:TOKEN", pg_store.sealed_secret("conv:a:TOKEN") or "")
    assert first.get("conv:b:TOKEN") is None
    assert first.known_values() == [TOKEN]


def test_the_vault_behind_the_module_functions_serves_the_session_layer(
    pg_store: Store,
) -> None:
    vault = _vault(pg_store, new_secret_key())
    vault.check_key()
    previous = secrets.use_vault(vault)
    try:
        assert set_conversation_secret("c9", "GITHUB_TOKEN", TOKEN) is True
        assert conversation_environment("c9") == {"GITHUB_TOKEN": TOKEN}
        assert secrets.known_secret_values() == [TOKEN]
        assert secrets.redact_known_secrets(f"token={TOKEN}") == "token=[redacted]"
        assert secrets.keyring_status().backend == "encrypted in the database"
    finally:
        secrets.use_vault(previous)
    assert secrets.active_vault() is secrets.default_vault()
    assert pg_store.sealed_secret_names("conv:c9:") == ["conv:c9:GITHUB_TOKEN"]


def test_a_missing_or_malformed_key_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(SecretKeyError) as missing:
        load_secret_key(None, {})
    assert MAKE_KEY_COMMAND in str(missing.value) and "plain text" in str(missing.value)
    with pytest.raises(SecretKeyError) as short:
        load_secret_key(None, {SECRET_KEY_VARIABLE: "hunter2"})
    assert "is not a key" in str(short.value) and MAKE_KEY_COMMAND in str(short.value)
    with pytest.raises(SecretKeyError) as no_file:
        load_secret_key(tmp_path / "nowhere.key", {})
    assert "no secret key file at" in str(no_file.value)

    key_file = tmp_path / "secret.key"
    key_file.write_text(base64.b64encode(bytes(range(32))).decode() + "\n")  # openssl's form
    assert load_secret_key(key_file, {SECRET_KEY_VARIABLE: "ignored: the file wins"}) \
        == bytes(range(32))
    assert len(load_secret_key(None, {SECRET_KEY_VARIABLE: new_secret_key()})) == 32


def test_a_sqlite_store_keeps_no_secrets_and_says_so(tmp_path: Path) -> None:
    with Store.open(tmp_path / "conversations.sqlite3") as store, \
            pytest.raises(StoreError, match="PostgreSQL only"):
        store.sealed_secret_names()
