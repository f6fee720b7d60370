"""What the sync and async clients share: configuration from the arguments or the
environment, decoding a response, the retry rule and the Server-Sent Events parser.

The SSE parser is written here (about 30 lines of the WHATWG rules we use: ``id``,
``event``, ``data``, comments) rather than taken from ``httpx-sse``, because resuming
from the last ``seq`` after a reconnect is ours to do either way and it keeps the
dependencies to httpx and websockets."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from . import _errors
from ._models import Event
from ._routes import Call

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:8080"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
USER_AGENT = f"droidpilot-python/{__version__}"


def base_url(url: str | None) -> str:
    """The server's URL: the argument, else ``DROIDPILOT_URL``, else the default."""
    return (url or os.environ.get("DROIDPILOT_URL") or DEFAULT_URL).rstrip("/")


def headers(token: str | None) -> dict[str, str]:
    """Request headers: the bearer token from the argument, else ``DROIDPILOT_TOKEN``."""
    token = token if token is not None else os.environ.get("DROIDPILOT_TOKEN")
    h = {"user-agent": USER_AGENT}
    if token:
        h["authorization"] = f"Bearer {token}"
    return h


def ws_url(url: str) -> str:
    return "ws" + url[len("http") :] + "/v1/ws" if url.startswith("http") else url + "/v1/ws"


def may_retry(call: Call, error: Exception | None, status: int | None) -> bool:
    """Whether a failed try may be sent again: an idempotent call after a transport error
    or a 429/502/503/504, and any call whose connection was never made."""
    if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
        return True
    if not call.idempotent:
        return False
    return error is not None or status in RETRY_STATUSES


def backoff(attempt: int, response: httpx.Response | None = None) -> float:
    """Seconds before retry number ``attempt`` (1-based): ``Retry-After`` when the
    server gives one (capped at 10 s), else 0.2 s doubling up to 2 s."""
    if response is not None:
        after = response.headers.get("retry-after", "")
        if after.isdigit():
            return min(float(after), 10.0)
    return float(min(0.2 * 2 ** (attempt - 1), 2.0))


def decode(call: Call, response: httpx.Response) -> Any:
    if call.expect == "json":
        return response.json()
    if call.expect == "bytes":
        return response.content
    if call.expect == "text":
        return response.text
    return None


@dataclass
class SseMessage:
    event: str
    data: str
    id: str | None


class SseParser:
    """Turns the lines of a ``text/event-stream`` into messages."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> SseMessage | None:
        if not line:
            if not self._data and not self._event:
                return None
            msg = SseMessage(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data, self._id = "", [], None
            return msg
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None

    def feed_all(self, lines: Iterable[str]) -> list[SseMessage]:
        return [m for m in (self.feed(line) for line in lines) if m is not None]


def sse_event(msg: SseMessage) -> Event | None:
    """The event an SSE message carries; ``None`` for a ``lagged`` notice (the missed
    events follow it); an ``error`` message raises its ``APIError``."""
    if msg.event == "lagged":
        return None
    if msg.event == "error":
        raise _errors.from_shape(json.loads(msg.data))
    return Event.from_dict(json.loads(msg.data))


def ws_frame(text: str | bytes) -> dict[str, Any]:
    """A WebSocket frame as JSON; an ``error`` frame raises its ``APIError``."""
    frame: dict[str, Any] = json.loads(text)
    if frame.get("type") == "error":
        raise _errors.from_shape(frame)
    return frame
