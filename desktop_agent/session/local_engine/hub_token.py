"""The Hugging Face access token, kept in the keyring like every other secret.

Gated repositories (Llama, Gemma) need a token whose owner accepted the model's
terms. It is read at the moment a download starts, never stored in settings,
never logged, and passed to the hub client only (see ``engine.downloads``).
"""

from __future__ import annotations

HUB_TOKEN_NAME = "huggingface:token"
"""The keyring entry's name (the value is the token)."""


def hub_token() -> str | None:
    """The stored token, or None. Blocking: the keyring may wait on D-Bus."""
    from desktop_agent.appdata.secrets import get_secret

    return get_secret(HUB_TOKEN_NAME) or None


def set_hub_token(token: str | None) -> bool:
    """Store the token (None or blank forgets it); False when the keyring refused.

    Blocking, as :func:`hub_token`.
    """
    from desktop_agent.appdata.secrets import delete_secret, set_secret

    if token and token.strip():
        return set_secret(HUB_TOKEN_NAME, token.strip())
    delete_secret(HUB_TOKEN_NAME)
    return True
