"""The asynchronous client: ``Client`` call for call, awaitable, with async iterators
for events (httpx) and the WebSocket (``websockets.asyncio``)."""

from __future__ import annotations

import asyncio
import builtins
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

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

AsyncOnAsk = Callable[[Question], "str | Awaitable[str]"]
"""Answers the agent's question; may be a plain function or a coroutine function."""


class AsyncClient:
    """``Client``, awaitable: the same arguments, calls and errors."""

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
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, timeout=timeout)
        self.scripts = AsyncScripts(self)
        self.devices = AsyncDevices(self)
        self.flow_runs = AsyncFlowRuns(self)
        self.workspaces = AsyncWorkspaces(self)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: r.Call) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
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
                    await asyncio.sleep(backoff(attempt))
                    continue
                raise _errors.TransportError(f"{call.method} {call.path}: {e!r}") from e
            if response.status_code >= 400:
                if attempt < self._retries and may_retry(call, None, response.status_code):
                    attempt += 1
                    await asyncio.sleep(backoff(attempt, response))
                    continue
                raise _errors.from_response(response)
            return response

    async def _call(self, call: r.Call) -> Any:
        return decode(call, await self._send(call))

    async def health(self) -> Health:
        return Health.from_dict(await self._call(r.HEALTHZ()))

    async def ready(self) -> Health:
        return Health.from_dict(await self._call(r.READYZ()))

    async def metrics(self) -> str:
        text: str = await self._call(r.METRICS())
        return text

    async def presets(self) -> Presets:
        return Presets.from_dict(await self._call(r.PRESETS()))

    async def submit(self, **task: Any) -> Task:
        return Task.from_dict(await self._call(r.SUBMIT(json=task)))

    async def get(self, task_id: str) -> Task:
        return Task.from_dict(await self._call(r.TASK(id=task_id)))

    async def list(
        self, *, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> TaskPage:
        params = {"status": status, "limit": limit, "cursor": cursor}
        return TaskPage.from_dict(await self._call(r.TASKS(params=params)))

    async def iter_tasks(
        self, *, status: str | None = None, page_size: int = 100
    ) -> AsyncIterator[TaskSummary]:
        cursor: str | None = None
        while True:
            page = await self.list(status=status, limit=page_size, cursor=cursor)
            for t in page.tasks:
                yield t
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def cancel(self, task_id: str) -> CancelResult:
        return CancelResult.from_dict(await self._call(r.CANCEL(id=task_id)))

    async def delete(self, task_id: str) -> None:
        await self._call(r.DELETE_TASK(id=task_id))

    async def answer(self, task_id: str, answer: str, prompt_id: str | None = None) -> Intervention:
        body = {"answer": answer, "prompt_id": prompt_id}
        return Intervention.from_dict(await self._call(r.ANSWER(id=task_id, json=body)))

    async def pause(self, task_id: str, by: str | None = None) -> Task:
        return Task.from_dict(await self._call(r.PAUSE(id=task_id, json=_by(by))))

    async def act(self, task_id: str, action: dict[str, Any], by: str | None = None) -> ManualActionResult:
        body = {**action, **({"by": by} if by else {})}
        return ManualActionResult.from_dict(await self._call(r.TASK_ACTION(id=task_id, json=body)))

    async def resume(self, task_id: str, by: str | None = None) -> Task:
        return Task.from_dict(await self._call(r.RESUME(id=task_id, json=_by(by))))

    async def steps(self, task_id: str) -> builtins.list[Step]:
        return [Step.from_dict(s) for s in await self._call(r.STEPS(id=task_id))]

    async def interventions(self, task_id: str) -> builtins.list[Intervention]:
        return [Intervention.from_dict(i) for i in await self._call(r.INTERVENTIONS(id=task_id))]

    async def screenshot(self, task_id: str, step: int) -> bytes:
        png: bytes = await self._call(r.STEP_SCREENSHOT(id=task_id, n=step))
        return png

    async def step_hierarchy(self, task_id: str, step: int) -> str:
        """The UI hierarchy XML a step was decided on (servers with `debug_artifacts`)."""
        xml: str = await self._call(r.STEP_HIERARCHY(id=task_id, n=step))
        return xml

    async def trajectory(self, task_id: str) -> Trajectory:
        return Trajectory.from_dict(await self._call(r.TRAJECTORY(id=task_id)))

    async def task_metrics(self, task_id: str) -> PhaseSummary:
        """Where the task's time went: per phase the sum, mean and max over its steps (ms)."""
        return PhaseSummary.from_dict(await self._call(r.TASK_METRICS(id=task_id)))

    async def estimate(self, task_id: str) -> TaskEstimate:
        """The time the task has left, about (null ``estimate`` once it has ended)."""
        return TaskEstimate.from_dict(await self._call(r.TASK_ESTIMATE(id=task_id)))

    async def steps_csv(self, task_id: str) -> str:
        """The task's steps as CSV, one row each."""
        text: str = await self._call(r.STEPS_CSV(id=task_id))
        return text

    async def export(self, task_id: str) -> bytes:
        data: bytes = await self._call(r.EXPORT(id=task_id))
        return data

    async def replay_gif(
        self, task_id: str, *, width: int | None = None, frame_ms: int | None = None
    ) -> bytes:
        data: bytes = await self._call(
            r.REPLAY_GIF(id=task_id, params={"width": width, "frame_ms": frame_ms})
        )
        return data

    async def replay_mp4(self, task_id: str, *, width: int | None = None, source: str | None = None) -> bytes:
        data: bytes = await self._call(r.REPLAY_MP4(id=task_id, params={"width": width, "source": source}))
        return data

    async def result(self, task_id: str) -> MobileTaskResult:
        return MobileTaskResult.from_dict(await self._call(r.RESULT(id=task_id)))

    async def wait(self, task_id: str, timeout: float | None = None, *, poll_interval: float = 0.25) -> Task:
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = min(poll_interval, 0.05)
        while True:
            task = await self.get(task_id)
            if task.ended:
                return task
            if deadline is not None and time.monotonic() >= deadline:
                raise _errors.WaitTimeout(task, timeout or 0.0)
            pause = interval if deadline is None else min(interval, max(deadline - time.monotonic(), 0))
            await asyncio.sleep(pause)
            interval = min(interval * 2, poll_interval)

    def events(self, task_id: str, since: int = 0, *, timeout: float | None = None) -> AsyncEventStream:
        """``async for event in client.events(task_id): ...``, resumed like ``Client.events``."""
        return AsyncEventStream(self, task_id, since, timeout)

    async def follow(
        self,
        task_id: str,
        on_ask: AsyncOnAsk | None = None,
        *,
        on_event: Callable[[Event], Any] | None = None,
        timeout: float | None = None,
    ) -> Task:
        async for event in self.events(task_id, timeout=timeout):
            if on_event is not None:
                done = on_event(event)
                if inspect.isawaitable(done):
                    await done
            question = event.question()
            if question is not None and on_ask is not None and await self._is_open(question):
                reply = on_ask(question)
                answer = await reply if inspect.isawaitable(reply) else reply
                try:
                    await self.answer(question.task_id, answer, question.prompt_id)
                except _errors.ConflictError:
                    pass
        return await self.wait(task_id, timeout=30)

    async def _is_open(self, q: Question) -> bool:
        """Whether a question is still unanswered (see ``Client._is_open``)."""
        return any(i.id == q.prompt_id and i.answered_at is None for i in await self.interventions(q.task_id))

    async def run(
        self,
        *,
        on_ask: AsyncOnAsk | None = None,
        on_event: Callable[[Event], Any] | None = None,
        timeout: float | None = None,
        **task: Any,
    ) -> Task:
        submitted = await self.submit(**task)
        return await self.follow(submitted.id, on_ask, on_event=on_event, timeout=timeout)

    async def run_mobile_task(
        self,
        request: MobileTaskRequest,
        on_ask: AsyncOnAsk | None = None,
        *,
        timeout: float | None = None,
    ) -> MobileTaskResult:
        task = await self.run(on_ask=on_ask, timeout=timeout, **request.to_dict())
        return await self.result(task.id)

    def watch(
        self,
        tasks: builtins.list[str] | None = None,
        *,
        all: bool = False,
        since: dict[str, int] | None = None,
        devices: bool = False,
    ) -> AsyncWatch:
        """``async with client.watch([a, b]) as w: async for event in w: ...``"""
        return AsyncWatch(self, tasks or [], all=all, since=since or {}, devices=devices)


def _by(by: str | None) -> dict[str, Any]:
    return {"by": by} if by else {}


class AsyncEventStream:
    """One task's events as an async iterator, resumed after a broken connection."""

    def __init__(self, client: AsyncClient, task_id: str, since: int, timeout: float | None) -> None:
        self.task_id = task_id
        self.last_seq = since
        self.reconnects = 0
        self.max_reconnects = 8
        self._client = client
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[Event]:
        failures = 0
        while True:
            got = 0
            try:
                async for event in self._connect():
                    got += 1
                    failures = 0
                    yield event
                    if event.type == "task.finished":
                        return
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
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise _errors.WaitTimeout(await self._client.get(self.task_id), self._timeout or 0.0)
            self.reconnects += 1
            await asyncio.sleep(backoff(failures or 1))

    def _read_timeout(self) -> float:
        if self._deadline is None:
            return 60.0
        return max(min(60.0, self._deadline - time.monotonic()), 0.01)

    async def _connect(self) -> AsyncIterator[Event]:
        call = r.EVENTS(id=self.task_id, params={"since": self.last_seq})
        timeout = httpx.Timeout(self._client._timeout, read=self._read_timeout())
        async with self._client._http.stream(
            "GET", call.path, params=call.params, headers={"accept": "text/event-stream"}, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _errors.from_response(response)
            parser = SseParser()
            async for line in response.aiter_lines():
                msg = parser.feed(line)
                event = sse_event(msg) if msg is not None else None
                if event is not None and event.seq > self.last_seq:
                    self.last_seq = event.seq
                    yield event


class AsyncWatch:
    """``Watch`` for asyncio: events of many tasks over one WebSocket."""

    def __init__(
        self,
        client: AsyncClient,
        tasks: builtins.list[str],
        *,
        all: bool,
        since: dict[str, int],
        devices: bool,
    ) -> None:
        self._client = client
        self.state = WatchState(tasks, all=all, since=since, devices=devices)
        self._ws: ClientConnection | None = None
        self.reconnects = 0

    async def __aenter__(self) -> AsyncWatch:
        await self._open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    async def _open(self) -> None:
        url = ws_url(self._client.base_url)
        try:
            self._ws = await connect(
                url, additional_headers=self._client._headers, open_timeout=self._client._timeout
            )
        except InvalidStatus as e:
            raise _errors.from_shape(_json_or_none(e.response.body), status=e.response.status_code) from e
        except OSError as e:
            raise _errors.TransportError(f"WebSocket {url}: {e!r}") from e
        sub = self.state.subscription()
        if sub["tasks"] or sub["all"] or sub["devices"]:
            await self._ws.send(subscribe_message(sub))

    async def subscribe(self, tasks: builtins.list[str], since: dict[str, int] | None = None) -> None:
        self.state.add(tasks, since or {})
        await self._send_text(subscribe_message({"tasks": tasks, "since": since or {}}))

    async def answer(self, task_id: str, answer: str, prompt_id: str | None = None) -> None:
        message = {"type": "answer", "task_id": task_id, "prompt_id": prompt_id, "answer": answer}
        await self._send_text(json.dumps(message))

    async def cancel(self, task_id: str) -> None:
        await self._send_text(json.dumps({"type": "cancel", "task_id": task_id}))

    async def _send_text(self, text: str) -> None:
        if self._ws is None:
            await self._open()
        assert self._ws is not None
        await self._ws.send(text)

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> Event:
        while not self.state.done():
            if self._ws is None:
                await self._open()
            assert self._ws is not None
            try:
                text = await self._ws.recv()
            except ConnectionClosed:
                self._ws = None
                self.reconnects += 1
                if self.reconnects > 8:
                    raise _errors.TransportError("the WebSocket keeps closing") from None
                await asyncio.sleep(backoff(min(self.reconnects, 4)))
                continue
            event = self.state.take(ws_frame(text))
            if event is not None:
                return event
        raise StopAsyncIteration


def _json_or_none(body: bytes | bytearray | None) -> Any:
    try:
        return json.loads(body or b"")
    except ValueError:
        return None


class AsyncScripts:
    """``Client.scripts``, awaitable."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> ScriptPage:
        return ScriptPage.from_dict(await self._c._call(r.SCRIPTS(params={"limit": limit, "cursor": cursor})))

    async def get(self, script_id: str, version: int | None = None) -> ScriptRecord:
        return ScriptRecord.from_dict(
            await self._c._call(r.SCRIPT(id=script_id, params={"version": version}))
        )

    async def create(self, script: Script | dict[str, Any]) -> ScriptRecord:
        body = script.to_dict() if isinstance(script, Script) else script
        return ScriptRecord.from_dict(await self._c._call(r.CREATE_SCRIPT(json=body)))

    async def record(self, task_id: str, name: str | None = None) -> ScriptRecord:
        body = {"from_task": task_id, **({"name": name} if name else {})}
        return ScriptRecord.from_dict(await self._c._call(r.CREATE_SCRIPT(json=body)))

    async def update(self, script_id: str, script: Script | dict[str, Any]) -> ScriptRecord:
        body = script.to_dict() if isinstance(script, Script) else script
        return ScriptRecord.from_dict(await self._c._call(r.UPDATE_SCRIPT(id=script_id, json=body)))

    async def delete(self, script_id: str) -> None:
        await self._c._call(r.DELETE_SCRIPT(id=script_id))

    async def versions(self, script_id: str) -> builtins.list[ScriptRecord]:
        return [ScriptRecord.from_dict(v) for v in await self._c._call(r.SCRIPT_VERSIONS(id=script_id))]

    async def import_maestro(self, flow: str) -> ScriptRecord:
        call = r.IMPORT_SCRIPT(content=flow.encode(), headers={"content-type": "application/yaml"})
        return ScriptRecord.from_dict(await self._c._call(call))

    async def export_maestro(self, script_id: str, version: int | None = None) -> str:
        call = r.EXPORT_SCRIPT(id=script_id, params={"format": "maestro", "version": version})
        text: str = await self._c._call(call)
        return text

    async def export(self, script_id: str, version: int | None = None) -> Script:
        call = r.EXPORT_SCRIPT(id=script_id, params={"format": "json", "version": version})
        return Script.from_dict(json.loads(await self._c._call(call)))

    async def run(self, script_id: str, inputs: dict[str, Any] | None = None, **options: Any) -> Task:
        body = {**options, **({"inputs": inputs} if inputs is not None else {})}
        return Task.from_dict(await self._c._call(r.RUN_SCRIPT(id=script_id, json=body)))


class AsyncWorkspaces:
    """``Client.workspaces``, awaitable."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(self, name: str, files: dict[str, str]) -> WorkspaceVersion:
        """Stores a workspace given as files (path → text) as version 1."""
        body = {"name": name, "files": files}
        return WorkspaceVersion.from_dict(await self._c._call(r.CREATE_WORKSPACE(json=body)))

    async def create_zip(self, name: str, archive: bytes) -> WorkspaceVersion:
        """Stores a zipped workspace folder as version 1."""
        call = r.CREATE_WORKSPACE(
            content=archive, headers={"content-type": "application/zip"}, params={"name": name}
        )
        return WorkspaceVersion.from_dict(await self._c._call(call))

    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> WorkspacePage:
        return WorkspacePage.from_dict(await self._c._call(r.WORKSPACES(params={"limit": limit, "cursor": cursor})))

    async def get(self, workspace_id: str) -> WorkspaceVersion:
        """The latest version: files and what config.yaml selects."""
        return WorkspaceVersion.from_dict(await self._c._call(r.WORKSPACE(id=workspace_id)))

    async def delete(self, workspace_id: str) -> None:
        await self._c._call(r.DELETE_WORKSPACE(id=workspace_id))

    async def versions(self, workspace_id: str) -> builtins.list[WorkspaceVersion]:
        return [WorkspaceVersion.from_dict(v) for v in await self._c._call(r.WORKSPACE_VERSIONS(id=workspace_id))]

    async def add_version(
        self, workspace_id: str, files: dict[str, str], name: str | None = None
    ) -> WorkspaceVersion:
        """Stores every file of a new version; the old versions are kept."""
        body: dict[str, Any] = {"files": files, **({"name": name} if name else {})}
        return WorkspaceVersion.from_dict(await self._c._call(r.ADD_WORKSPACE_VERSION(id=workspace_id, json=body)))

    async def add_version_zip(
        self, workspace_id: str, archive: bytes, name: str | None = None
    ) -> WorkspaceVersion:
        call = r.ADD_WORKSPACE_VERSION(
            id=workspace_id,
            content=archive,
            headers={"content-type": "application/zip"},
            params={"name": name},
        )
        return WorkspaceVersion.from_dict(await self._c._call(call))

    async def version(self, workspace_id: str, version: int) -> WorkspaceContents:
        """One version with its files' text."""
        return WorkspaceContents.from_dict(await self._c._call(r.WORKSPACE_VERSION(id=workspace_id, n=version)))

    async def download(self, workspace_id: str, version: int) -> bytes:
        """One version as a ``.zip``."""
        data: bytes = await self._c._call(r.WORKSPACE_ZIP(id=workspace_id, n=version))
        return data


class AsyncFlowRuns:
    """Flow runs: a Maestro workspace run across the pool, its results, reports and
    events."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def start(self, files: dict[str, str], **options: Any) -> FlowRun:
        """Runs a workspace given as files (path → text); ``env``, ``include_tags``,
        ``exclude_tags``, ``shards`` or ``devices``, ``retries``… as ``POST /v1/flow-runs``
        takes them."""
        return FlowRun.from_dict(await self._c._call(r.START_FLOW_RUN(json={"files": files, **options})))

    async def start_workspace(self, workspace_id: str, version: int | None = None, **options: Any) -> FlowRun:
        """Runs a stored workspace's version (the latest by default); the options as for
        ``start``. The run records the version (``FlowRun.workspace``)."""
        body = {"workspace": workspace_id, **({"version": version} if version else {}), **options}
        return FlowRun.from_dict(await self._c._call(r.START_FLOW_RUN(json=body)))

    async def start_zip(self, archive: bytes, **options: Any) -> FlowRun:
        """Runs a zipped workspace folder; the options go in the query (``env`` as a list
        of ``KEY=VALUE``, tags and devices comma-separated)."""
        call = r.START_FLOW_RUN(
            content=archive, headers={"content-type": "application/zip"}, params=options
        )
        return FlowRun.from_dict(await self._c._call(call))

    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> FlowRunPage:
        return FlowRunPage.from_dict(await self._c._call(r.FLOW_RUNS(params={"limit": limit, "cursor": cursor})))

    async def get(self, run_id: str) -> FlowRun:
        return FlowRun.from_dict(await self._c._call(r.FLOW_RUN(id=run_id)))

    async def cancel(self, run_id: str) -> FlowRun:
        return FlowRun.from_dict(await self._c._call(r.CANCEL_FLOW_RUN(id=run_id)))

    async def report(self, run_id: str, format: str = "junit") -> str:
        """JUnit XML (``junit``) or a self-contained HTML page (``html``)."""
        text: str = await self._c._call(r.FLOW_RUN_REPORT(id=run_id, params={"format": format}))
        return text

    async def events(self, run_id: str, since: int = 0) -> AsyncIterator[Event]:
        """The run's events, from ``since``, until ``flow_run.finished``."""
        call = r.FLOW_RUN_EVENTS(id=run_id, params={"since": since})
        async with self._c._http.stream(
            "GET", call.path, params=call.params, headers={"accept": "text/event-stream"}
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _errors.from_response(response)
            parser = SseParser()
            async for line in response.aiter_lines():
                msg = parser.feed(line)
                event = sse_event(msg) if msg is not None else None
                if event is not None:
                    yield event


class AsyncDevices:
    """``Client.devices``, awaitable."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def list(self) -> builtins.list[Device]:
        return [Device.from_dict(d) for d in (await self._c._call(r.DEVICES()))["devices"]]

    async def get(self, device_id: str) -> Device:
        return Device.from_dict(await self._c._call(r.DEVICE(id=device_id)))

    async def add(
        self, *, address: str | None = None, serial: str | None = None, sim: str | None = None
    ) -> Device:
        body = {k: v for k, v in {"address": address, "serial": serial, "sim": sim}.items() if v is not None}
        return Device.from_dict(await self._c._call(r.ADD_DEVICE(json=body)))

    async def remove(self, device_id: str, *, force: bool = False) -> None:
        await self._c._call(r.REMOVE_DEVICE(id=device_id, params={"force": force or None}))

    async def act(
        self,
        device_id: str,
        action: dict[str, Any],
        *,
        force: bool = False,
        include_screen_state: bool = False,
    ) -> ActionResult:
        params = {"force": force or None, "include": "screen_state" if include_screen_state else None}
        return ActionResult.from_dict(
            await self._c._call(r.DEVICE_ACTION(id=device_id, json=action, params=params))
        )

    async def screen(self, device_id: str, *, ocr: bool = False) -> Screen:
        """What an agent sees; ``ocr=True`` merges in the text OCR reads off the screenshot."""
        params = {"ocr": ocr or None}
        return Screen.from_dict(await self._c._call(r.DEVICE_SCREEN(id=device_id, params=params)))

    async def screenshot(
        self,
        device_id: str,
        *,
        format: str | None = None,
        scale: float | None = None,
        quality: int | None = None,
    ) -> bytes:
        params = {"format": format, "scale": scale, "quality": quality}
        data: bytes = await self._c._call(r.DEVICE_SCREENSHOT(id=device_id, params=params))
        return data

    async def hierarchy(self, device_id: str) -> str:
        text: str = await self._c._call(r.DEVICE_HIERARCHY(id=device_id))
        return text

    async def apps(self, device_id: str) -> builtins.list[DescribedApp]:
        return [DescribedApp.from_dict(a) for a in await self._c._call(r.DEVICE_APPS(id=device_id))]

    async def app_strings(self, device_id: str, package: str) -> AppStrings:
        """The app's string resources per locale, read from its APK."""
        return AppStrings.from_dict(
            await self._c._call(r.DEVICE_APP_STRINGS(id=device_id, package=package))
        )

    async def context(self, device_id: str) -> PhoneContext:
        """The phone's locale, language, country, time zone, keyboard and visible windows."""
        return PhoneContext.from_dict(await self._c._call(r.DEVICE_CONTEXT(id=device_id)))

    async def inspect(self, device_id: str, *, selector: str | None = None) -> dict[str, Any]:
        """The screen as the dashboard's inspector shows it: every visible node with its
        bounds, attributes, recommended selector and alternatives; with ``selector``, what
        that selector matches now."""
        result: dict[str, Any] = await self._c._call(
            r.DEVICE_INSPECT(id=device_id, params={"selector": selector})
        )
        return result

    async def take_control(self, device_id: str, *, by: str | None = None) -> dict[str, Any]:
        """Holds a free phone to drive it by hand (``control_id`` names the hold); it lapses
        unless kept alive or used."""
        body = {"by": by} if by is not None else None
        result: dict[str, Any] = await self._c._call(r.TAKE_CONTROL(id=device_id, json=body))
        return result

    async def keep_control(self, device_id: str, control_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._c._call(
            r.KEEP_CONTROL(id=device_id, control_id=control_id)
        )
        return result

    async def release_control(self, device_id: str, control_id: str) -> None:
        await self._c._call(r.RELEASE_CONTROL(id=device_id, control_id=control_id))

    async def control_act(self, device_id: str, control_id: str, action: dict[str, Any]) -> dict[str, Any]:
        """Runs one action on a phone this client holds; it is recorded as a step."""
        result: dict[str, Any] = await self._c._call(
            r.CONTROL_ACTION(id=device_id, control_id=control_id, json=action)
        )
        return result

    async def recording(
        self, device_id: str, control_id: str, *, from_step: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """The actions taken under a hold, as a script document."""
        params = {"from": from_step, "name": name}
        result: dict[str, Any] = await self._c._call(
            r.CONTROL_RECORDING(id=device_id, control_id=control_id, params=params)
        )
        return result
