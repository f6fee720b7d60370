"""The synchronous client (httpx for HTTP and Server-Sent Events, ``websockets.sync``
for the WebSocket). ``AsyncClient`` in ``_async_client.py`` mirrors it call for call."""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from . import _errors
from . import _routes as r
from ._common import (
    RETRY_STATUSES,
    SseParser,
    backoff,
    decode,
    headers,
    may_retry,
    sse_event,
    ws_frame,
    ws_url,
)
from ._common import base_url as base_url_of
from ._models import (
    ActionResult,
    AppStrings,
    CancelResult,
    DescribedApp,
    Device,
    Event,
    FlowRun,
    FlowRunPage,
    Health,
    Intervention,
    ManualActionResult,
    MobileTaskRequest,
    MobileTaskResult,
    PhaseSummary,
    PhoneContext,
    Presets,
    Question,
    Screen,
    Script,
    ScriptPage,
    ScriptRecord,
    Step,
    Task,
    TaskEstimate,
    TaskPage,
    TaskSummary,
    Trajectory,
    WorkspaceContents,
    WorkspacePage,
    WorkspaceVersion,
)
from ._watch import WatchState, subscribe_message

OnAsk = Callable[[Question], str]
"""Answers the agent's question (``Question.question``, ``Question.options``)."""


class Client:
    """A droidpilot server. ``base_url`` defaults to ``DROIDPILOT_URL`` (else
    ``http://127.0.0.1:8080``), ``token`` to ``DROIDPILOT_TOKEN``. ``timeout`` bounds
    each request (seconds); ``retries`` is how often an idempotent request (GET, PUT,
    DELETE) is sent again after a connection failure or a 429/502/503/504. A request
    whose connection was never made is retried whatever its method; a POST that may
    have reached the server never is."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 2,
    ) -> None:
        self.base_url = base_url_of(base_url)
        self._headers = headers(token)
        self._retries = retries
        self._timeout = timeout
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=timeout)
        self.scripts = Scripts(self)
        self.devices = Devices(self)
        self.flow_runs = FlowRuns(self)
        self.workspaces = Workspaces(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------

    def _send(self, call: r.Call) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    content=call.content,
                    headers=call.headers,
                )
            except httpx.TransportError as e:
                if attempt < self._retries and may_retry(call, e, None):
                    attempt += 1
                    time.sleep(backoff(attempt))
                    continue
                raise _errors.TransportError(f"{call.method} {call.path}: {e!r}") from e
            if response.status_code >= 400:
                if attempt < self._retries and may_retry(call, None, response.status_code):
                    attempt += 1
                    time.sleep(backoff(attempt, response))
                    continue
                raise _errors.from_response(response)
            return response

    def _call(self, call: r.Call) -> Any:
        return decode(call, self._send(call))

    # -- server ---------------------------------------------------------------------

    def health(self) -> Health:
        """``/healthz``: the process answers."""
        return Health.from_dict(self._call(r.HEALTHZ()))

    def ready(self) -> Health:
        """``/readyz``: the database answers (``ServerError`` 503 when it does not)."""
        return Health.from_dict(self._call(r.READYZ()))

    def metrics(self) -> str:
        """The Prometheus metrics, as text."""
        text: str = self._call(r.METRICS())
        return text

    def presets(self) -> Presets:
        """What a submit form offers: agent kinds, configured models, default limits."""
        return Presets.from_dict(self._call(r.PRESETS()))

    # -- tasks ----------------------------------------------------------------------

    def submit(self, **task: Any) -> Task:
        """Submits a task (the fields of ``POST /v1/tasks``: ``instruction`` or
        ``ai_prompt``, ``agent``, ``device_id``, ``max_steps``…); an unknown field is a
        ``ValidationError`` naming it. Never retried once sent."""
        return Task.from_dict(self._call(r.SUBMIT(json=task)))

    def get(self, task_id: str) -> Task:
        return Task.from_dict(self._call(r.TASK(id=task_id)))

    def list(
        self, *, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> TaskPage:
        """One page of tasks, newest first (``TaskPage.next_cursor`` for the next)."""
        params = {"status": status, "limit": limit, "cursor": cursor}
        return TaskPage.from_dict(self._call(r.TASKS(params=params)))

    def iter_tasks(self, *, status: str | None = None, page_size: int = 100) -> Iterator[TaskSummary]:
        """Every task (with ``status``, if given), newest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.list(status=status, limit=page_size, cursor=cursor)
            yield from page.tasks
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def cancel(self, task_id: str) -> CancelResult:
        return CancelResult.from_dict(self._call(r.CANCEL(id=task_id)))

    def delete(self, task_id: str) -> None:
        """Deletes an ended task and what only it holds (admin scope)."""
        self._call(r.DELETE_TASK(id=task_id))

    def answer(self, task_id: str, answer: str, prompt_id: str | None = None) -> Intervention:
        """Answers the open question (``prompt_id`` guards against answering a newer one)."""
        body = {"answer": answer, "prompt_id": prompt_id}
        return Intervention.from_dict(self._call(r.ANSWER(id=task_id, json=body)))

    def pause(self, task_id: str, by: str | None = None) -> Task:
        """Take-over: the runner holds at its next step boundary (status ``paused``)."""
        return Task.from_dict(self._call(r.PAUSE(id=task_id, json=_by(by))))

    def act(self, task_id: str, action: dict[str, Any], by: str | None = None) -> ManualActionResult:
        """A person's action on a paused task's phone, recorded as a step."""
        body = {**action, **({"by": by} if by else {})}
        return ManualActionResult.from_dict(self._call(r.TASK_ACTION(id=task_id, json=body)))

    def resume(self, task_id: str, by: str | None = None) -> Task:
        """Hands the phone back to the agent, which is told what the person did."""
        return Task.from_dict(self._call(r.RESUME(id=task_id, json=_by(by))))

    def steps(self, task_id: str) -> builtins.list[Step]:
        return [Step.from_dict(s) for s in self._call(r.STEPS(id=task_id))]

    def interventions(self, task_id: str) -> builtins.list[Intervention]:
        return [Intervention.from_dict(i) for i in self._call(r.INTERVENTIONS(id=task_id))]

    def screenshot(self, task_id: str, step: int) -> bytes:
        """The PNG step ``step`` was decided on."""
        png: bytes = self._call(r.STEP_SCREENSHOT(id=task_id, n=step))
        return png

    def step_hierarchy(self, task_id: str, step: int) -> str:
        """The UI hierarchy XML a step was decided on (servers with `debug_artifacts`)."""
        xml: str = self._call(r.STEP_HIERARCHY(id=task_id, n=step))
        return xml

    def trajectory(self, task_id: str) -> Trajectory:
        return Trajectory.from_dict(self._call(r.TRAJECTORY(id=task_id)))

    def task_metrics(self, task_id: str) -> PhaseSummary:
        """Where the task's time went: per phase the sum, mean and max over its steps (ms)."""
        return PhaseSummary.from_dict(self._call(r.TASK_METRICS(id=task_id)))

    def estimate(self, task_id: str) -> TaskEstimate:
        """The time the task has left, about (null ``estimate`` once it has ended)."""
        return TaskEstimate.from_dict(self._call(r.TASK_ESTIMATE(id=task_id)))

    def steps_csv(self, task_id: str) -> str:
        """The task's steps as CSV, one row each."""
        text: str = self._call(r.STEPS_CSV(id=task_id))
        return text

    def export(self, task_id: str) -> bytes:
        """The run as ``.tar.gz``: ``ID/trajectory.json`` and ``ID/screenshots/NNNN.png``."""
        data: bytes = self._call(r.EXPORT(id=task_id))
        return data

    def replay_gif(self, task_id: str, *, width: int | None = None, frame_ms: int | None = None) -> bytes:
        data: bytes = self._call(r.REPLAY_GIF(id=task_id, params={"width": width, "frame_ms": frame_ms}))
        return data

    def replay_mp4(self, task_id: str, *, width: int | None = None, source: str | None = None) -> bytes:
        """The run as an H.264 MP4: ``source="steps"`` (each step's screen held for its real
        time, taps drawn) or ``"recording"`` (a ``record_video`` task's screen recording)."""
        data: bytes = self._call(r.REPLAY_MP4(id=task_id, params={"width": width, "source": source}))
        return data

    def result(self, task_id: str) -> MobileTaskResult:
        """The coordinator's result of an ended task (``ConflictError`` before it ends)."""
        return MobileTaskResult.from_dict(self._call(r.RESULT(id=task_id)))

    def wait(self, task_id: str, timeout: float | None = None, *, poll_interval: float = 0.25) -> Task:
        """The task once it has ended. Raises ``WaitTimeout`` (carrying the task as last
        seen) after ``timeout`` seconds; ``None`` waits as long as it takes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = min(poll_interval, 0.05)
        while True:
            task = self.get(task_id)
            if task.ended:
                return task
            if deadline is not None and time.monotonic() >= deadline:
                raise _errors.WaitTimeout(task, timeout or 0.0)
            pause = interval if deadline is None else min(interval, max(deadline - time.monotonic(), 0))
            time.sleep(pause)
            interval = min(interval * 2, poll_interval)

    def events(self, task_id: str, since: int = 0, *, timeout: float | None = None) -> EventStream:
        """The task's events after ``since`` (0: all), then live ones, ending with
        ``task.finished``; a broken connection is resumed from the last ``seq``
        received, so no event is missed or repeated."""
        return EventStream(self, task_id, since, timeout)

    def follow(
        self,
        task_id: str,
        on_ask: OnAsk | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        timeout: float | None = None,
    ) -> Task:
        """Streams a task to its end, calling ``on_ask`` for each question of the agent
        and answering with what it returns, and ``on_event`` for each event; returns
        the ended task. Without ``on_ask`` a question waits for someone else's answer.
        After ``timeout`` seconds it raises ``WaitTimeout``; the task carries on (cancel
        it if you give up on it)."""
        for event in self.events(task_id, timeout=timeout):
            if on_event is not None:
                on_event(event)
            question = event.question()
            if question is not None and on_ask is not None and self._is_open(question):
                self._answer_open(question, on_ask(question))
        return self.wait(task_id, timeout=30)

    def _is_open(self, q: Question) -> bool:
        """Whether a question is still unanswered: following a task from its start replays
        the questions someone already answered, which ``on_ask`` is not asked again."""
        return any(i.id == q.prompt_id and i.answered_at is None for i in self.interventions(q.task_id))

    def _answer_open(self, q: Question, answer: str) -> None:
        try:
            self.answer(q.task_id, answer, q.prompt_id)
        except _errors.ConflictError:
            # Closed meanwhile (answered elsewhere, timed out, the task ended): the
            # stream says what happened next.
            pass

    def run(
        self,
        *,
        on_ask: OnAsk | None = None,
        on_event: Callable[[Event], None] | None = None,
        timeout: float | None = None,
        **task: Any,
    ) -> Task:
        """``submit(**task)`` then ``follow`` it: the ended task."""
        submitted = self.submit(**task)
        return self.follow(submitted.id, on_ask, on_event=on_event, timeout=timeout)

    def run_mobile_task(
        self,
        request: MobileTaskRequest,
        on_ask: OnAsk | None = None,
        *,
        timeout: float | None = None,
    ) -> MobileTaskResult:
        """A coordinator's ``MobileTaskRequest`` in, its ``MobileTaskResult`` out."""
        task = self.run(on_ask=on_ask, timeout=timeout, **request.to_dict())
        return self.result(task.id)

    def watch(
        self,
        tasks: builtins.list[str] | None = None,
        *,
        all: bool = False,
        since: dict[str, int] | None = None,
        devices: bool = False,
    ) -> Watch:
        """Many tasks over one WebSocket: ``with client.watch([a, b]) as w: for event in
        w: ...``. Iteration ends when every task watched by id has finished."""
        return Watch(self, tasks or [], all=all, since=since or {}, devices=devices)


def _by(by: str | None) -> dict[str, Any]:
    return {"by": by} if by else {}


class EventStream:
    """One task's events, resumed after a broken connection (``reconnects`` counts
    them; ``last_seq`` is the last event delivered)."""

    def __init__(self, client: Client, task_id: str, since: int, timeout: float | None) -> None:
        self.task_id = task_id
        self.last_seq = since
        self.reconnects = 0
        self.max_reconnects = 8
        self._client = client
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout

    def __iter__(self) -> Iterator[Event]:
        failures = 0
        while True:
            got = 0
            try:
                for event in self._connect():
                    got += 1
                    failures = 0
                    yield event
                    if event.type == "task.finished":
                        return
                # Ended without `task.finished`: the server had nothing more for us (a
                # finished task resumed at its end) when it sent nothing, else it closed
                # the stream early and we resume.
                if got == 0:
                    return
            except httpx.TransportError as e:
                failures += 1
                if failures > self.max_reconnects:
                    raise _errors.TransportError(f"event stream of {self.task_id}: {e!r}") from e
            except _errors.APIError as e:
                # Too many streams open (429) or the server busy (503): wait and retry.
                failures += 1
                if e.status not in RETRY_STATUSES or failures > self.max_reconnects:
                    raise
            self._check_deadline()
            self.reconnects += 1
            time.sleep(backoff(failures or 1))

    def _check_deadline(self) -> None:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise _errors.WaitTimeout(self._client.get(self.task_id), self._timeout or 0.0)

    def _read_timeout(self) -> float:
        if self._deadline is None:
            return 60.0
        return max(min(60.0, self._deadline - time.monotonic()), 0.01)

    def _connect(self) -> Iterator[Event]:
        call = r.EVENTS(id=self.task_id, params={"since": self.last_seq})
        timeout = httpx.Timeout(self._client._timeout, read=self._read_timeout())
        with self._client._http.stream(
            "GET", call.path, params=call.params, headers={"accept": "text/event-stream"}, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise _errors.from_response(response)
            parser = SseParser()
            for line in response.iter_lines():
                msg = parser.feed(line)
                event = sse_event(msg) if msg is not None else None
                if event is not None and event.seq > self.last_seq:
                    self.last_seq = event.seq
                    yield event


class Watch:
    """Events of many tasks over one WebSocket (``GET /v1/ws``), resumed after a broken
    connection from the last ``seq`` of each task. Iterating yields ``Event``s; an error
    the server sends (e.g. answering a question that is closed) raises its
    ``APIError`` from ``next`` and the iteration may go on."""

    def __init__(
        self, client: Client, tasks: builtins.list[str], *, all: bool, since: dict[str, int], devices: bool
    ) -> None:
        self._client = client
        self.state = WatchState(tasks, all=all, since=since, devices=devices)
        self._ws: ClientConnection | None = None
        self.reconnects = 0

    def __enter__(self) -> Watch:
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def _open(self) -> None:
        url = ws_url(self._client.base_url)
        try:
            # Entered as a context manager, as websockets >= 17.1 wants (works since 13,
            # where `__enter__` is typed as returning the base `Connection`).
            entered: Any = connect(
                url, additional_headers=self._client._headers, open_timeout=self._client._timeout
            ).__enter__()
            self._ws = entered
        except InvalidStatus as e:
            raise _errors.from_shape(_json_or_none(e.response.body), status=e.response.status_code) from e
        except OSError as e:
            raise _errors.TransportError(f"WebSocket {url}: {e!r}") from e
        sub = self.state.subscription()
        if sub["tasks"] or sub["all"] or sub["devices"]:
            self._ws.send(subscribe_message(sub))

    def subscribe(self, tasks: builtins.list[str], since: dict[str, int] | None = None) -> None:
        """Watches more tasks on the same socket."""
        self.state.add(tasks, since or {})
        self._send_text(subscribe_message({"tasks": tasks, "since": since or {}}))

    def answer(self, task_id: str, answer: str, prompt_id: str | None = None) -> None:
        """Answers a question over the socket (the ``answered`` reply is in ``replies``)."""
        self._send_text(
            _dumps({"type": "answer", "task_id": task_id, "prompt_id": prompt_id, "answer": answer})
        )

    def cancel(self, task_id: str) -> None:
        self._send_text(_dumps({"type": "cancel", "task_id": task_id}))

    def _send_text(self, text: str) -> None:
        if self._ws is None:
            self._open()
        assert self._ws is not None
        self._ws.send(text)

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> Event:
        while not self.state.done():
            if self._ws is None:
                self._open()
            assert self._ws is not None
            try:
                text = self._ws.recv()
            except ConnectionClosed:
                self._ws = None
                self.reconnects += 1
                if self.reconnects > 8:
                    raise _errors.TransportError("the WebSocket keeps closing") from None
                time.sleep(backoff(min(self.reconnects, 4)))
                continue
            event = self.state.take(ws_frame(text))
            if event is not None:
                return event
        raise StopIteration


def _json_or_none(body: bytes | bytearray | None) -> Any:
    try:
        return json.loads(body or b"")
    except ValueError:
        return None


def _dumps(message: dict[str, Any]) -> str:
    return json.dumps(message)


class Scripts:
    """Scripts: store, record from a task, run, versions, Maestro import and export."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> ScriptPage:
        return ScriptPage.from_dict(self._c._call(r.SCRIPTS(params={"limit": limit, "cursor": cursor})))

    def get(self, script_id: str, version: int | None = None) -> ScriptRecord:
        return ScriptRecord.from_dict(self._c._call(r.SCRIPT(id=script_id, params={"version": version})))

    def create(self, script: Script | dict[str, Any]) -> ScriptRecord:
        """Stores a script document as a new script (version 1)."""
        body = script.to_dict() if isinstance(script, Script) else script
        return ScriptRecord.from_dict(self._c._call(r.CREATE_SCRIPT(json=body)))

    def record(self, task_id: str, name: str | None = None) -> ScriptRecord:
        """Records a finished task's successful steps as a script."""
        body = {"from_task": task_id, **({"name": name} if name else {})}
        return ScriptRecord.from_dict(self._c._call(r.CREATE_SCRIPT(json=body)))

    def update(self, script_id: str, script: Script | dict[str, Any]) -> ScriptRecord:
        """Stores an edited document as the script's next version."""
        body = script.to_dict() if isinstance(script, Script) else script
        return ScriptRecord.from_dict(self._c._call(r.UPDATE_SCRIPT(id=script_id, json=body)))

    def delete(self, script_id: str) -> None:
        self._c._call(r.DELETE_SCRIPT(id=script_id))

    def versions(self, script_id: str) -> builtins.list[ScriptRecord]:
        return [ScriptRecord.from_dict(v) for v in self._c._call(r.SCRIPT_VERSIONS(id=script_id))]

    def import_maestro(self, flow: str) -> ScriptRecord:
        """Stores a Maestro flow (YAML); a command that does not map is a
        ``ValidationError`` naming its line."""
        call = r.IMPORT_SCRIPT(content=flow.encode(), headers={"content-type": "application/yaml"})
        return ScriptRecord.from_dict(self._c._call(call))

    def export_maestro(self, script_id: str, version: int | None = None) -> str:
        """The script as a Maestro flow (YAML)."""
        text: str = self._c._call(
            r.EXPORT_SCRIPT(id=script_id, params={"format": "maestro", "version": version})
        )
        return text

    def export(self, script_id: str, version: int | None = None) -> Script:
        """The script as a document."""
        call = r.EXPORT_SCRIPT(id=script_id, params={"format": "json", "version": version})
        return Script.from_dict(json.loads(self._c._call(call)))

    def run(self, script_id: str, inputs: dict[str, Any] | None = None, **options: Any) -> Task:
        """Runs a script as a task (``device_id``, ``version``, ``recovery``, ``provider``,
        ``model``… as ``POST /v1/scripts/{id}/run`` takes them)."""
        body = {**options, **({"inputs": inputs} if inputs is not None else {})}
        return Task.from_dict(self._c._call(r.RUN_SCRIPT(id=script_id, json=body)))


class Workspaces:
    """Stored Maestro workspaces, versioned like scripts: upload (files or a ``.zip``),
    versions, files, download, delete. ``flow_runs.start_workspace`` runs one."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def create(self, name: str, files: dict[str, str]) -> WorkspaceVersion:
        """Stores a workspace given as files (path → text) as version 1."""
        body = {"name": name, "files": files}
        return WorkspaceVersion.from_dict(self._c._call(r.CREATE_WORKSPACE(json=body)))

    def create_zip(self, name: str, archive: bytes) -> WorkspaceVersion:
        """Stores a zipped workspace folder as version 1."""
        call = r.CREATE_WORKSPACE(
            content=archive, headers={"content-type": "application/zip"}, params={"name": name}
        )
        return WorkspaceVersion.from_dict(self._c._call(call))

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> WorkspacePage:
        return WorkspacePage.from_dict(self._c._call(r.WORKSPACES(params={"limit": limit, "cursor": cursor})))

    def get(self, workspace_id: str) -> WorkspaceVersion:
        """The latest version: files and what config.yaml selects."""
        return WorkspaceVersion.from_dict(self._c._call(r.WORKSPACE(id=workspace_id)))

    def delete(self, workspace_id: str) -> None:
        self._c._call(r.DELETE_WORKSPACE(id=workspace_id))

    def versions(self, workspace_id: str) -> builtins.list[WorkspaceVersion]:
        return [WorkspaceVersion.from_dict(v) for v in self._c._call(r.WORKSPACE_VERSIONS(id=workspace_id))]

    def add_version(
        self, workspace_id: str, files: dict[str, str], name: str | None = None
    ) -> WorkspaceVersion:
        """Stores every file of a new version; the old versions are kept."""
        body: dict[str, Any] = {"files": files, **({"name": name} if name else {})}
        return WorkspaceVersion.from_dict(self._c._call(r.ADD_WORKSPACE_VERSION(id=workspace_id, json=body)))

    def add_version_zip(
        self, workspace_id: str, archive: bytes, name: str | None = None
    ) -> WorkspaceVersion:
        call = r.ADD_WORKSPACE_VERSION(
            id=workspace_id,
            content=archive,
            headers={"content-type": "application/zip"},
            params={"name": name},
        )
        return WorkspaceVersion.from_dict(self._c._call(call))

    def version(self, workspace_id: str, version: int) -> WorkspaceContents:
        """One version with its files' text."""
        return WorkspaceContents.from_dict(self._c._call(r.WORKSPACE_VERSION(id=workspace_id, n=version)))

    def download(self, workspace_id: str, version: int) -> bytes:
        """One version as a ``.zip``."""
        data: bytes = self._c._call(r.WORKSPACE_ZIP(id=workspace_id, n=version))
        return data


class FlowRuns:
    """Flow runs: a Maestro workspace run across the pool, its results, reports and
    events."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def start(self, files: dict[str, str], **options: Any) -> FlowRun:
        """Runs a workspace given as files (path → text); ``env``, ``include_tags``,
        ``exclude_tags``, ``shards`` or ``devices``, ``retries``… as ``POST /v1/flow-runs``
        takes them."""
        return FlowRun.from_dict(self._c._call(r.START_FLOW_RUN(json={"files": files, **options})))

    def start_workspace(self, workspace_id: str, version: int | None = None, **options: Any) -> FlowRun:
        """Runs a stored workspace's version (the latest by default); the options as for
        ``start``. The run records the version (``FlowRun.workspace``)."""
        body = {"workspace": workspace_id, **({"version": version} if version else {}), **options}
        return FlowRun.from_dict(self._c._call(r.START_FLOW_RUN(json=body)))

    def start_zip(self, archive: bytes, **options: Any) -> FlowRun:
        """Runs a zipped workspace folder; the options go in the query (``env`` as a list
        of ``KEY=VALUE``, tags and devices comma-separated)."""
        call = r.START_FLOW_RUN(
            content=archive, headers={"content-type": "application/zip"}, params=options
        )
        return FlowRun.from_dict(self._c._call(call))

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> FlowRunPage:
        return FlowRunPage.from_dict(self._c._call(r.FLOW_RUNS(params={"limit": limit, "cursor": cursor})))

    def get(self, run_id: str) -> FlowRun:
        return FlowRun.from_dict(self._c._call(r.FLOW_RUN(id=run_id)))

    def cancel(self, run_id: str) -> FlowRun:
        return FlowRun.from_dict(self._c._call(r.CANCEL_FLOW_RUN(id=run_id)))

    def report(self, run_id: str, format: str = "junit") -> str:
        """JUnit XML (``junit``) or a self-contained HTML page (``html``)."""
        text: str = self._c._call(r.FLOW_RUN_REPORT(id=run_id, params={"format": format}))
        return text

    def events(self, run_id: str, since: int = 0) -> Iterator[Event]:
        """The run's events, from ``since``, until ``flow_run.finished``."""
        call = r.FLOW_RUN_EVENTS(id=run_id, params={"since": since})
        with self._c._http.stream(
            "GET", call.path, params=call.params, headers={"accept": "text/event-stream"}
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise _errors.from_response(response)
            parser = SseParser()
            for line in response.iter_lines():
                msg = parser.feed(line)
                event = sse_event(msg) if msg is not None else None
                if event is not None:
                    yield event


class Devices:
    """The device pool: list, add, remove, act on one, read its screen."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def list(self) -> builtins.list[Device]:
        return [Device.from_dict(d) for d in self._c._call(r.DEVICES())["devices"]]

    def get(self, device_id: str) -> Device:
        return Device.from_dict(self._c._call(r.DEVICE(id=device_id)))

    def add(self, *, address: str | None = None, serial: str | None = None, sim: str | None = None) -> Device:
        """Adds one phone: a network ``address`` (``adb connect``), a ``serial`` the adb
        server lists, or a virtual phone named ``sim``."""
        body = {k: v for k, v in {"address": address, "serial": serial, "sim": sim}.items() if v is not None}
        return Device.from_dict(self._c._call(r.ADD_DEVICE(json=body)))

    def remove(self, device_id: str, *, force: bool = False) -> None:
        self._c._call(r.REMOVE_DEVICE(id=device_id, params={"force": force or None}))

    def act(
        self,
        device_id: str,
        action: dict[str, Any],
        *,
        force: bool = False,
        include_screen_state: bool = False,
    ) -> ActionResult:
        """Runs one action (``{"action": "tap", "selector": "#ok"}``) on the device."""
        params = {"force": force or None, "include": "screen_state" if include_screen_state else None}
        return ActionResult.from_dict(
            self._c._call(r.DEVICE_ACTION(id=device_id, json=action, params=params))
        )

    def screen(self, device_id: str, *, ocr: bool = False) -> Screen:
        """What an agent sees; ``ocr=True`` merges in the text OCR reads off the screenshot."""
        params = {"ocr": ocr or None}
        return Screen.from_dict(self._c._call(r.DEVICE_SCREEN(id=device_id, params=params)))

    def screenshot(
        self,
        device_id: str,
        *,
        format: str | None = None,
        scale: float | None = None,
        quality: int | None = None,
    ) -> bytes:
        params = {"format": format, "scale": scale, "quality": quality}
        data: bytes = self._c._call(r.DEVICE_SCREENSHOT(id=device_id, params=params))
        return data

    def hierarchy(self, device_id: str) -> str:
        text: str = self._c._call(r.DEVICE_HIERARCHY(id=device_id))
        return text

    def apps(self, device_id: str) -> builtins.list[DescribedApp]:
        return [DescribedApp.from_dict(a) for a in self._c._call(r.DEVICE_APPS(id=device_id))]

    def app_strings(self, device_id: str, package: str) -> AppStrings:
        """The app's string resources per locale, read from its APK."""
        return AppStrings.from_dict(
            self._c._call(r.DEVICE_APP_STRINGS(id=device_id, package=package))
        )

    def context(self, device_id: str) -> PhoneContext:
        """The phone's locale, language, country, time zone, keyboard and visible windows."""
        return PhoneContext.from_dict(self._c._call(r.DEVICE_CONTEXT(id=device_id)))

    def inspect(self, device_id: str, *, selector: str | None = None) -> dict[str, Any]:
        """The screen as the dashboard's inspector shows it: every visible node with its
        bounds, attributes, recommended selector and alternatives; with ``selector``, what
        that selector matches now."""
        result: dict[str, Any] = self._c._call(
            r.DEVICE_INSPECT(id=device_id, params={"selector": selector})
        )
        return result

    def take_control(self, device_id: str, *, by: str | None = None) -> dict[str, Any]:
        """Holds a free phone to drive it by hand (``control_id`` names the hold); it lapses
        unless kept alive or used."""
        body = {"by": by} if by is not None else None
        result: dict[str, Any] = self._c._call(r.TAKE_CONTROL(id=device_id, json=body))
        return result

    def keep_control(self, device_id: str, control_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._c._call(
            r.KEEP_CONTROL(id=device_id, control_id=control_id)
        )
        return result

    def release_control(self, device_id: str, control_id: str) -> None:
        self._c._call(r.RELEASE_CONTROL(id=device_id, control_id=control_id))

    def control_act(self, device_id: str, control_id: str, action: dict[str, Any]) -> dict[str, Any]:
        """Runs one action on a phone this client holds; it is recorded as a step."""
        result: dict[str, Any] = self._c._call(
            r.CONTROL_ACTION(id=device_id, control_id=control_id, json=action)
        )
        return result

    def recording(
        self, device_id: str, control_id: str, *, from_step: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """The actions taken under a hold, as a script document."""
        params = {"from": from_step, "name": name}
        result: dict[str, Any] = self._c._call(
            r.CONTROL_RECORDING(id=device_id, control_id=control_id, params=params)
        )
        return result
