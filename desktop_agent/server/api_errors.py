"""Errors as JSON bodies people can read, and a validation handler that hides input.

FastAPI's default 422 body repeats the offending input back to the caller. A
request that sets a secret or an API key may be the one that fails validation,
so our handler keeps only where and why, never the value.

The database being down is not the server's bug: every route then answers 503
with a ``Retry-After`` (a load balancer tries another replica, a script waits),
and ``GET /ready`` says the same. An error nothing expected is answered by
:mod:`.unexpected_errors`, which keeps the connection.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from desktop_agent.store import (
    DatabaseAccessError,
    DatabaseUnavailableError,
    NotFoundError,
    SecretInSettingsError,
    TextWithNulError,
)

log = logging.getLogger("desktop_agent.server.errors")


class ApiError(Exception):
    """An expected failure with an HTTP status, a stable code and a sentence."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.details = details


def not_found(what: str, ident: str) -> ApiError:
    """404 for an id that does not exist (the id is ours, never a secret)."""
    return ApiError(404, "not_found", f"No {what} with id {ident!r}.")


def _body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": message, "code": code}
    if details is not None:
        body["details"] = details
    return body


def _safe_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Keep location, message and type of each error; drop input, context and URLs."""
    details = []
    for err in exc.errors():
        details.append(
            {
                "loc": [str(part) for part in err.get("loc", ())],
                "msg": str(err.get("msg", "invalid value")),
                "type": str(err.get("type", "value_error")),
            }
        )
    return details


RETRY_AFTER_SECONDS = 5
"""What a 503 asks a client to wait before it tries again (the pool connects afresh)."""
DATABASE_UNAVAILABLE = "The database is unavailable; try again in a few seconds."


def database_unavailable() -> JSONResponse:
    """503 with ``Retry-After``: the database server cannot be reached now."""
    return JSONResponse(_body("database_unavailable", DATABASE_UNAVAILABLE), status_code=503,
                        headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                 405: "method_not_allowed", 409: "conflict", 413: "too_large",
                 415: "unsupported_media_type"}


def install_error_handlers(app: FastAPI) -> None:
    """Make every error answer a JSON :class:`ErrorBody`."""

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            _body(exc.code, exc.message, exc.details), status_code=exc.status,
            headers=exc.headers
        )

    @app.exception_handler(SecretInSettingsError)
    async def _secret_in_settings(_request: Request, exc: SecretInSettingsError) -> JSONResponse:
        # The store's message names the setting, never its value.
        return JSONResponse(_body("secret_in_settings", str(exc)), status_code=422)

    @app.exception_handler(NotFoundError)
    async def _store_not_found(_request: Request, _exc: NotFoundError) -> JSONResponse:
        return JSONResponse(_body("not_found", "It was deleted while the request ran."),
                            status_code=404)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = _safe_details(exc)
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        where = ".".join(p for p in first["loc"] if p not in ("body",)) or "request"
        message = f"Invalid request: {where}: {first['msg']}"
        return JSONResponse(_body("invalid_request", message, details), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "http_error")
        detail = exc.detail if isinstance(exc.detail, str) else "Request failed."
        if exc.status_code == 404 and detail == "Not Found":
            detail = "No such route."
        return JSONResponse(_body(code, detail), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(TextWithNulError)
    async def _text_with_nul(_request: Request, exc: TextWithNulError) -> JSONResponse:
        return JSONResponse(_body("invalid_text", str(exc)), status_code=422)

    @app.exception_handler(DatabaseUnavailableError)
    async def _database_unavailable(_request: Request,
                                    exc: DatabaseUnavailableError) -> JSONResponse:
        log.warning("answered 503: %s", exc)
        return database_unavailable()

    @app.exception_handler(DatabaseAccessError)
    async def _database_error(_request: Request, exc: DatabaseAccessError) -> JSONResponse:
        # The driver's words may quote what was written: logged, not answered.
        log.error("a database call failed while answering a request", exc_info=exc)
        return JSONResponse(_body("database_error", "The conversation database could not be "
                                  "used for this request; nothing was changed. See the "
                                  "server's log."), status_code=500)
