"""Every route the clients call, declared once: method, path template, the query
parameters it takes and what it answers. The sync and async clients build their
requests from these, and ``tests/test_spec.py`` checks them against the server's
OpenAPI document (each route is a path and method there, and each of its query
parameters is one the route declares; each path and method there is one of these)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal
from urllib.parse import quote

Expect = Literal["json", "bytes", "text", "none"]

ROUTES: dict[tuple[str, str], Route] = {}

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})


@dataclasses.dataclass(frozen=True)
class Call:
    """One request, ready to send."""

    method: str
    path: str
    params: dict[str, Any]
    json: Any = None
    content: str | bytes | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    expect: Expect = "json"

    @property
    def idempotent(self) -> bool:
        """Safe to send again when the first try's fate is unknown."""
        return self.method in _IDEMPOTENT


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    template: str
    query: tuple[str, ...] = ()
    expect: Expect = "json"

    def __post_init__(self) -> None:
        ROUTES[(self.method, self.template)] = self

    def __call__(
        self,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        content: str | bytes | None = None,
        headers: dict[str, str] | None = None,
        **path: str | int,
    ) -> Call:
        unknown = set(params or {}) - set(self.query)
        if unknown:
            raise TypeError(f"{self.method} {self.template} takes no {sorted(unknown)}")
        encoded = {k: quote(str(v), safe="") for k, v in path.items()}
        query = {k: _query_value(v) for k, v in (params or {}).items() if v is not None}
        return Call(
            self.method,
            self.template.format(**encoded),
            query,
            json,
            content,
            headers or {},
            self.expect,
        )


def _query_value(v: Any) -> Any:
    return ("true" if v else "false") if isinstance(v, bool) else v


HEALTHZ = Route("GET", "/healthz")
READYZ = Route("GET", "/readyz")
METRICS = Route("GET", "/metrics", expect="text")
PRESETS = Route("GET", "/v1/presets")

TASKS = Route("GET", "/v1/tasks", ("status", "limit", "cursor"))
SUBMIT = Route("POST", "/v1/tasks")
TASK = Route("GET", "/v1/tasks/{id}")
DELETE_TASK = Route("DELETE", "/v1/tasks/{id}", expect="none")
CANCEL = Route("POST", "/v1/tasks/{id}/cancel")
ANSWER = Route("POST", "/v1/tasks/{id}/answer")
PAUSE = Route("POST", "/v1/tasks/{id}/pause")
TASK_ACTION = Route("POST", "/v1/tasks/{id}/actions")
RESUME = Route("POST", "/v1/tasks/{id}/resume")
STEPS = Route("GET", "/v1/tasks/{id}/steps")
INTERVENTIONS = Route("GET", "/v1/tasks/{id}/interventions")
STEP_SCREENSHOT = Route("GET", "/v1/tasks/{id}/steps/{n}/screenshot", expect="bytes")
STEP_HIERARCHY = Route("GET", "/v1/tasks/{id}/steps/{n}/hierarchy", expect="text")
TRAJECTORY = Route("GET", "/v1/tasks/{id}/trajectory")
TASK_METRICS = Route("GET", "/v1/tasks/{id}/metrics")
TASK_ESTIMATE = Route("GET", "/v1/tasks/{id}/estimate")
STEPS_CSV = Route("GET", "/v1/tasks/{id}/steps.csv", expect="text")
EXPORT = Route("GET", "/v1/tasks/{id}/export", expect="bytes")
RESULT = Route("GET", "/v1/tasks/{id}/result")
REPLAY_GIF = Route("GET", "/v1/tasks/{id}/replay.gif", ("width", "frame_ms"), expect="bytes")
REPLAY_MP4 = Route("GET", "/v1/tasks/{id}/replay.mp4", ("width", "source"), expect="bytes")
EVENTS = Route("GET", "/v1/tasks/{id}/events", ("since",))
WS = Route("GET", "/v1/ws")

SCRIPTS = Route("GET", "/v1/scripts", ("limit", "cursor"))
CREATE_SCRIPT = Route("POST", "/v1/scripts")
IMPORT_SCRIPT = Route("POST", "/v1/scripts/import")
SCRIPT = Route("GET", "/v1/scripts/{id}", ("version",))
UPDATE_SCRIPT = Route("PUT", "/v1/scripts/{id}")
DELETE_SCRIPT = Route("DELETE", "/v1/scripts/{id}", expect="none")
EXPORT_SCRIPT = Route("GET", "/v1/scripts/{id}/export", ("format", "version"), expect="text")
RUN_SCRIPT = Route("POST", "/v1/scripts/{id}/run")
SCRIPT_VERSIONS = Route("GET", "/v1/scripts/{id}/versions")

FLOW_RUNS = Route("GET", "/v1/flow-runs", ("limit", "cursor"))
START_FLOW_RUN = Route(
    "POST",
    "/v1/flow-runs",
    ("shards", "devices", "retries", "include_tags", "exclude_tags", "env", "max_steps", "timeout_seconds", "recovery", "heal"),
)
FLOW_RUN = Route("GET", "/v1/flow-runs/{id}")
CANCEL_FLOW_RUN = Route("POST", "/v1/flow-runs/{id}/cancel")
FLOW_RUN_REPORT = Route("GET", "/v1/flow-runs/{id}/report", ("format",), expect="text")
FLOW_RUN_EVENTS = Route("GET", "/v1/flow-runs/{id}/events", ("since",))

WORKSPACES = Route("GET", "/v1/workspaces", ("limit", "cursor"))
CREATE_WORKSPACE = Route("POST", "/v1/workspaces", ("name",))
WORKSPACE = Route("GET", "/v1/workspaces/{id}")
DELETE_WORKSPACE = Route("DELETE", "/v1/workspaces/{id}", expect="none")
WORKSPACE_VERSIONS = Route("GET", "/v1/workspaces/{id}/versions")
ADD_WORKSPACE_VERSION = Route("POST", "/v1/workspaces/{id}/versions", ("name",))
WORKSPACE_VERSION = Route("GET", "/v1/workspaces/{id}/versions/{n}")
WORKSPACE_ZIP = Route("GET", "/v1/workspaces/{id}/versions/{n}/zip", expect="bytes")

DEVICES = Route("GET", "/v1/devices")
ADD_DEVICE = Route("POST", "/v1/devices")
DEVICE = Route("GET", "/v1/devices/{id}")
REMOVE_DEVICE = Route("DELETE", "/v1/devices/{id}", ("force",), expect="none")
DEVICE_ACTION = Route("POST", "/v1/devices/{id}/actions", ("force", "include"))
DEVICE_APPS = Route("GET", "/v1/devices/{id}/apps")
DEVICE_APP_STRINGS = Route("GET", "/v1/devices/{id}/apps/{package}/strings")
DEVICE_CONTEXT = Route("GET", "/v1/devices/{id}/context")
DEVICE_HIERARCHY = Route("GET", "/v1/devices/{id}/hierarchy", expect="text")
DEVICE_SCREEN = Route("GET", "/v1/devices/{id}/screen", ("format", "ocr"))
DEVICE_INSPECT = Route("GET", "/v1/devices/{id}/inspect", ("selector",))
TAKE_CONTROL = Route("POST", "/v1/devices/{id}/control")
KEEP_CONTROL = Route("POST", "/v1/devices/{id}/control/{control_id}")
RELEASE_CONTROL = Route("DELETE", "/v1/devices/{id}/control/{control_id}", expect="none")
CONTROL_ACTION = Route("POST", "/v1/devices/{id}/control/{control_id}/actions")
CONTROL_RECORDING = Route("GET", "/v1/devices/{id}/control/{control_id}/recording", ("from", "name"))
DEVICE_SCREENSHOT = Route(
    "GET", "/v1/devices/{id}/screenshot", ("format", "scale", "quality"), expect="bytes"
)
