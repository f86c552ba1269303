"""The one place where errors become HTTP answers and MCP tool errors.

Every error answer has one shape, :class:`hivemem.answers.ErrorBody` (``{error, message, …}``):
hivemem's own errors, invalid input, and what the framework itself refuses (unknown routes,
wrong methods, bodies that are not JSON).
"""

from __future__ import annotations

from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from mcp.server.mcpserver.exceptions import ToolError
from starlette.exceptions import HTTPException
from starlette.routing import Match

from api.http.guard import RequestTooDeep
from api.services.memories import FORGET_NEEDS_CONFIRM
from hivemem.answers import ErrorBody, describe_errors, error_message
from hivemem.errors import (
    AuditNotFoundError,
    AuthenticationError,
    BrokerUnavailableError,
    ConfigError,
    ConfirmationRequired,
    DocumentAccessDenied,
    DocumentNotFoundError,
    DuplicateMemoryError,
    EmbeddingError,
    EmbeddingMismatchError,
    HivememError,
    JobError,
    JobNotFoundError,
    MemoryNotFoundError,
    NotAGoalError,
    PermissionDeniedError,
    PreviewChangedError,
    SecretRefused,
    SecretScanBudgetError,
    SourceNotFoundError,
    StoreCorruptError,
    StoreUnavailableError,
    TokenNotFoundError,
    TooManyAttempts,
    UndoRefused,
    ValidationError,
)

__all__ = ["ERROR_RESPONSES", "install_handlers", "status_of", "tool_error"]

# Retrying a memorize after a 503 is safe: identical content in a scope is stored once, so a retry
# of a write that did land only reinforces it.
# A store that is away (a node restarting, a cluster electing) is back in seconds: sooner than
# this, a client's retry would likely meet the same outage; later, an agent waits for nothing.
UNAVAILABLE_RETRY_AFTER_S = 5

RETRY_HINT = (
    " Retrying is safe: a memorize that did land is not stored twice (identical content in a scope "
    "only reinforces the stored memory)."
)

# Most specific first: the first class an error is an instance of decides.
_STATUS: tuple[tuple[type[HivememError], int, str], ...] = (
    (DocumentNotFoundError, 404, "document_not_found"),
    (DocumentAccessDenied, 403, "document_access_denied"),
    (SecretRefused, 422, "secret_refused"),
    (ValidationError, 422, "validation_error"),
    (TooManyAttempts, 429, "too_many_requests"),
    (AuthenticationError, 401, "unauthorized"),
    (PermissionDeniedError, 403, "forbidden"),
    (TokenNotFoundError, 404, "token_not_found"),
    (ConfirmationRequired, 400, "confirmation_required"),
    (MemoryNotFoundError, 404, "not_found"),
    (SourceNotFoundError, 404, "source_not_found"),
    (AuditNotFoundError, 404, "audit_not_found"),
    (JobNotFoundError, 404, "job_not_found"),
    (BrokerUnavailableError, 503, "broker_unavailable"),
    (JobError, 500, "job_failed"),
    (DuplicateMemoryError, 409, "duplicate"),
    (UndoRefused, 409, "cannot_undo"),
    (PreviewChangedError, 409, "preview_changed"),
    (NotAGoalError, 409, "not_a_goal"),
    (EmbeddingMismatchError, 409, "embedding_mismatch"),
    (SecretScanBudgetError, 503, "scan_too_slow"),
    (StoreCorruptError, 503, "store_corrupt"),
    (StoreUnavailableError, 503, "store_unavailable"),
    (EmbeddingError, 503, "embedding_unavailable"),
    (ConfigError, 500, "config_error"),
    (HivememError, 500, "internal_error"),
)


def status_of(exc: HivememError) -> tuple[int, str]:
    """The HTTP status and error code for a hivemem error."""
    for cls, status, code in _STATUS:
        if isinstance(exc, cls):
            return status, code
    return 500, "internal_error"


def tool_error(exc: Exception) -> ToolError:
    """The MCP tool error for any failure of a tool call, with a message an agent can act on."""
    if isinstance(exc, pydantic.ValidationError):
        return ToolError(f"invalid input: {describe_errors(exc.errors())}")  # type: ignore[arg-type]
    if isinstance(exc, HivememError):
        status, code = status_of(exc)
        return ToolError(f"{code}: {exc}" + (RETRY_HINT if status == 503 else ""))
    return ToolError(f"internal_error: {type(exc).__name__}")


def _body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **extra}


def _described(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# Documented on every route, so the OpenAPI lists each status the server can answer.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _described("The body is not JSON (broken, not UTF-8, nested too deep) or a confirmation is missing."),
    401: _described("A token is needed (a team server, or tokens exist) and none, or no live one, was sent."),
    403: _described(
        "The caller's grants do not allow this in that scope, or a web page of an origin not in "
        "`HIVEMEM_CORS_ORIGINS` sent the request."
    ),
    404: _described("No such memory, job or route (or not in the caller's scopes)."),
    405: _described("The route does not take this method."),
    409: _described("A conflict with what is stored (another embedding model, a record already undone)."),
    413: _described("The body is larger than `HIVEMEM_MAX_REQUEST_BYTES`."),
    421: _described("The `Host` header names a host this server does not answer to."),
    422: _described("A field is invalid; `field` and `detail` say which and why. Nothing was written."),
    429: _described("Too many bad tokens from this address, or requests of this token; see `Retry-After`."),
    500: _described("An internal error, or a job that failed."),
    503: _described("The store, the embedder or the job broker is unavailable. Retrying is safe."),
}

_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}

# FastAPI's words for a body it could not decode (invalid UTF-8, nesting past the recursion limit).
_UNPARSABLE = "There was an error parsing the body"


def install_handlers(app: FastAPI) -> None:
    """Register the exception handlers: one JSON error shape, ``{error, message, …}``, everywhere."""

    @app.exception_handler(HivememError)
    async def _hivemem(_: Request, exc: HivememError) -> JSONResponse:
        status, code = status_of(exc)
        extra = {"field": exc.field} if isinstance(exc, ValidationError) and exc.field else {}
        message = str(exc) + (RETRY_HINT if status == 503 else "")
        headers = {"Retry-After": str(exc.retry_after_s)} if isinstance(exc, TooManyAttempts) else None
        if status == 503:
            headers = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)}
        return JSONResponse(_body(code, message, **extra), status_code=status, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # Starlette logs the exception after this answer; the client gets the same shape as always,
        # never a bare "Internal Server Error", and no traceback.
        if isinstance(exc, MemoryError):
            message = "the server ran out of memory answering this request; send less at once, or retry later"
            return JSONResponse(
                _body("out_of_memory", message + RETRY_HINT),
                status_code=503,
                headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)},
            )
        message = f"an unexpected {type(exc).__name__} on the server (its log has the details)"
        return JSONResponse(_body("internal_error", message), status_code=500)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(_body("malformed_json", "the request body is not valid JSON"), status_code=400)
        if all(tuple(e.get("loc", ())) == ("query", "confirm") for e in errors):
            # `confirm=true` is required; anything else is a refusal to forget, not a typo.
            return JSONResponse(_body("confirmation_required", FORGET_NEEDS_CONFIRM), status_code=400)
        return _validation_error(errors, request_location=True)

    @app.exception_handler(pydantic.ValidationError)
    async def _model_invalid(_: Request, exc: pydantic.ValidationError) -> JSONResponse:
        return _validation_error(list(exc.errors()), request_location=False)  # type: ignore[arg-type]

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        headers = exc.headers
        if exc.status_code == 400 and exc.detail == _UNPARSABLE:
            body = _body("malformed_json", "the request body is not valid JSON (broken, not UTF-8, or nested too deep)")
        elif isinstance(exc, RequestTooDeep):
            body = _body("malformed_json", str(exc.detail))
        elif exc.status_code == 405:
            allowed = _allowed_methods(request)
            headers = {"Allow": ", ".join(allowed)}
            body = _body("method_not_allowed", f"{request.url.path} takes {', '.join(allowed)}")
        elif exc.status_code == 404 and (asked := _memory_path_id(request.url.path)) is not None:
            # Routing takes only whole UUIDs as memory ids: a shortened or mistyped one lands here.
            body = _body(
                "not_found",
                f"{asked[:64]!r} is not a memory id: ids are whole UUIDs (36 characters, e.g. "
                "5b0d2c1e-8f3a-4e6b-9c7d-1a2b3c4d5e6f), as memorize and remember answer them",
            )
        else:
            body = _body(_HTTP_CODES.get(exc.status_code, "http_error"), str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=headers)


_MEMORY_PATH = "/v1/memories/"


def _memory_path_id(path: str) -> str | None:
    """The id asked for in ``/v1/memories/ID`` (one segment, no route of its own), else None."""
    if not path.startswith(_MEMORY_PATH):
        return None
    rest = path.removeprefix(_MEMORY_PATH)
    return rest if rest and "/" not in rest else None


# HEAD rides along with GET and OPTIONS answers CORS preflights; neither is an operation of its own.
_METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path (Starlette's 405 names only the first route's)."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]


def _validation_error(errors: list[dict[str, Any]], *, request_location: bool) -> JSONResponse:
    skip = 1 if request_location else 0
    detail = [
        {"field": ".".join(str(p) for p in e.get("loc", ())[skip:]) or "body", "message": error_message(e)}
        for e in errors
    ]
    message = describe_errors(errors, request_location=request_location)
    field = detail[0]["field"] if detail else "body"
    return JSONResponse(_body("validation_error", message, field=field, detail=detail), status_code=422)
