"""What ``desktop-agent serve`` checks before it starts: the master key and the address.

Kept apart from :mod:`.auth` (the routes' key check, which needs FastAPI) so
that the command can refuse a bad start-up, and answer ``/alive``, before
FastAPI and the rest of the app have loaded (see :mod:`.starting_app`).
"""

from __future__ import annotations

import ipaddress
import os

MASTER_KEY_ENV = "DESKTOP_AGENT_MASTER_KEY"


def master_key_from_env() -> str | None:
    """The configured master key, or None when unset or blank."""
    value = os.environ.get(MASTER_KEY_ENV, "").strip()
    return value or None


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class StartupRefused(ValueError):
    """The server must not start with this combination of key and host."""


def check_key_text(master_key: str | None) -> None:
    """Refuse a key no request could ever send: HTTP headers carry ASCII only.

    Raises:
        StartupRefused: The key has non-ASCII or control characters.
    """
    if master_key is not None and not (master_key.isascii() and master_key.isprintable()):
        raise StartupRefused(
            f"{MASTER_KEY_ENV} contains characters an HTTP header cannot carry (only printable "
            "ASCII can be sent in 'Authorization: Bearer <key>'), so no request could ever "
            "match it; choose a key of letters, digits and punctuation, e.g. "
            "$(openssl rand -hex 32).")


def check_startup(master_key: str | None, host: str, no_auth: bool) -> None:
    """Refuse a configuration that would expose the API without a key."""
    if not no_auth:
        check_key_text(master_key)
    if no_auth:
        if not is_loopback(host):
            raise StartupRefused(
                f"--no-auth is only allowed on a loopback address such as 127.0.0.1, "
                f"not {host!r}; set {MASTER_KEY_ENV} to serve on other addresses."
            )
        return
    if not master_key:
        raise StartupRefused(
            f"No master key: set {MASTER_KEY_ENV} to a long random string, "
            "or pass --no-auth to run without one on 127.0.0.1."
        )
