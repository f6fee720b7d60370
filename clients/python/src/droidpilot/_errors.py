"""Exceptions: the server's error shape (``code``, ``message``, ``hint``) as
``APIError`` and one subclass per kind of HTTP status, plus transport failures and a
``wait`` that ran out of time."""

from __future__ import annotations

import json
from typing import Any

import httpx


class DroidpilotError(Exception):
    """Base of every exception this package raises."""


class APIError(DroidpilotError):
    """The server refused or failed a request. ``code`` is stable and machine-readable,
    ``message`` says what went wrong, ``hint`` what to do; ``status`` is the HTTP status
    (``None`` for an error that arrived on an event stream)."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str = "",
        *,
        status: int | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{code}: {message}" + (f" (hint: {hint})" if hint else ""))
        self.code = code
        self.message = message
        self.hint = hint
        self.status = status
        self.body = body


class BadRequestError(APIError):
    """400, 413, 415 and other caller mistakes without a more specific class."""


class AuthenticationError(APIError):
    """401: no token, or a token the server does not know."""


class PermissionDeniedError(APIError):
    """403: the token's scope does not allow this."""


class NotFoundError(APIError):
    """404: no such task, script, device or route."""


class ConflictError(APIError):
    """409: the resource is not in a state that allows this (e.g. answering a task that
    asks nothing, pausing a task that is not running)."""


class ValidationError(APIError):
    """422: a field of the request is invalid; the message names it."""


class RateLimitError(APIError):
    """429: too many requests or streams."""


class ServerError(APIError):
    """5xx: the server or the phone failed."""


class TransportError(DroidpilotError):
    """The server could not be reached, or the connection broke (after any retries)."""


class WaitTimeout(DroidpilotError, TimeoutError):
    """``wait`` gave up before the task ended; ``task`` is the task as last seen."""

    def __init__(self, task: Any, timeout: float) -> None:
        super().__init__(f"task {task.id} is still {task.status} after {timeout:g} s")
        self.task = task
        self.timeout = timeout


_BY_STATUS: dict[int, type[APIError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationError,
    429: RateLimitError,
}


def error_class(status: int) -> type[APIError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else BadRequestError


def from_shape(shape: Any, *, status: int | None = None) -> APIError:
    """An exception from the error shape ``{"error": {code, message, hint}}``."""
    err = shape.get("error") if isinstance(shape, dict) else None
    cls = error_class(status) if status is not None else APIError
    if isinstance(err, dict) and "code" in err:
        return cls(
            str(err["code"]),
            str(err.get("message", "")),
            str(err.get("hint", "")),
            status=status,
            body=shape,
        )
    return cls(f"http_{status}", json.dumps(shape)[:500], status=status, body=shape)


def from_response(response: httpx.Response) -> APIError:
    """An exception for an error response, whether or not it has the error shape (a
    proxy in between may answer with HTML)."""
    try:
        shape = response.json()
    except ValueError:
        text = response.text[:500]
        return error_class(response.status_code)(
            f"http_{response.status_code}", text, status=response.status_code, body=text
        )
    return from_shape(shape, status=response.status_code)
