"""Bearer-key authentication for every route except ``GET /alive``.

The master key comes from ``DESKTOP_AGENT_MASTER_KEY``. It is compared in
constant time so response timing says nothing about how much of a guess was
right. Running without a key is allowed only on a loopback address, where the
only callers are programs on this machine (the start-up checks live in
:mod:`.startup_checks`, which ``serve`` reads before FastAPI is loaded).
"""

from __future__ import annotations

import hmac

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .api_errors import ApiError
from .startup_checks import (
    MASTER_KEY_ENV,
    StartupRefused,
    check_key_text,
    check_startup,
    is_loopback,
    master_key_from_env,
)

__all__ = ["MASTER_KEY_ENV", "StartupRefused", "bearer_scheme", "check_key_text",
           "check_startup", "is_loopback", "master_key_from_env", "require_key"]

_CHALLENGE = {"WWW-Authenticate": "Bearer"}

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="MasterKey",
    description="The server's master key from DESKTOP_AGENT_MASTER_KEY.",
)


async def require_key(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),  # noqa: B008
) -> None:
    """Dependency on every protected route: 401 unless the bearer key matches."""
    expected: str | None = request.app.state.master_key
    if expected is None:  # --no-auth on loopback
        return
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ApiError(
            401, "unauthorized", "Missing bearer key: send 'Authorization: Bearer <key>'.",
            headers=_CHALLENGE,
        )
    given = credentials.credentials.encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(given, expected.encode("utf-8")):
        raise ApiError(401, "unauthorized", "Wrong bearer key.", headers=_CHALLENGE)
