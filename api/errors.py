"""The one place where hivemem errors become HTTP statuses and MCP tool errors."""

from __future__ import annotations

from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from mcp.server.mcpserver.exceptions import ToolError

from hivemem.errors import (
    BrokerUnavailableError,
    ConfigError,
    ConfirmationRequired,
    DuplicateMemoryError,
    EmbeddingError,
    EmbeddingMismatchError,
    HivememError,
    JobError,
    JobNotFoundError,
    MemoryNotFoundError,
    StoreCorruptError,
    StoreUnavailableError,
    ValidationError,
)
from hivemem.schemas import describe_errors

__all__ = ["install_handlers", "status_of", "tool_error"]

# Most specific first: the first class an error is an instance of decides.
_STATUS: tuple[tuple[type[HivememError], int, str], ...] = (
    (ValidationError, 422, "validation_error"),
    (ConfirmationRequired, 400, "confirmation_required"),
    (MemoryNotFoundError, 404, "not_found"),
    (JobNotFoundError, 404, "job_not_found"),
    (BrokerUnavailableError, 503, "broker_unavailable"),
    (JobError, 500, "job_failed"),
    (DuplicateMemoryError, 409, "duplicate"),
    (EmbeddingMismatchError, 409, "embedding_mismatch"),
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
        _, code = status_of(exc)
        return ToolError(f"{code}: {exc}")
    return ToolError(f"internal_error: {type(exc).__name__}")


def _body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **extra}


def install_handlers(app: FastAPI) -> None:
    """Register the exception handlers: one JSON error shape, ``{error, message, …}``, everywhere."""

    @app.exception_handler(HivememError)
    async def _hivemem(_: Request, exc: HivememError) -> JSONResponse:
        status, code = status_of(exc)
        extra = {"field": exc.field} if isinstance(exc, ValidationError) and exc.field else {}
        return JSONResponse(_body(code, str(exc), **extra), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(_body("malformed_json", "the request body is not valid JSON"), status_code=400)
        detail = [{"field": ".".join(str(p) for p in e["loc"][1:]) or "body", "message": e["msg"]} for e in errors]
        return JSONResponse(
            _body(
                "validation_error",
                describe_errors(errors),
                detail=detail,
            ),
            status_code=422,
        )

    @app.exception_handler(pydantic.ValidationError)
    async def _model_invalid(_: Request, exc: pydantic.ValidationError) -> JSONResponse:
        return JSONResponse(_body("validation_error", describe_errors(exc.errors())), status_code=422)  # type: ignore[arg-type]
