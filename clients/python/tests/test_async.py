"""The async client against the live server: the same flows as the sync tests."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from conftest import TOKEN, replay, serve, waits
from proxy import Proxy

import droidpilot
from droidpilot import AsyncClient

pytestmark = pytest.mark.anyio

HOME = {"action": "home"}
SETTINGS = {"action": "launch_app", "package": "com.android.settings"}
ASK = {"action": "ask_user", "question": "Go home?", "options": ["yes", "no"]}


async def test_submit_then_wait(aclient: AsyncClient) -> None:
    task = await aclient.submit(instruction="settings", agent=replay(SETTINGS))
    assert task.status == "queued"
    done = await aclient.wait(task.id, timeout=60)
    assert done.status == "succeeded" and done.ended
    assert (await aclient.result(task.id)).success


async def test_a_broken_event_stream_is_resumed(aclient: AsyncClient, server_url: str) -> None:
    task = await aclient.submit(instruction="ten waits", agent=replay(*waits(10), HOME))
    with Proxy(int(server_url.rsplit(":", 1)[1]), cut_after_data=4, cuts=2) as proxy:
        async with AsyncClient(proxy.url, token=TOKEN) as through:
            stream = through.events(task.id)
            got = [(e.seq, e.type) async for e in stream]
    assert stream.reconnects >= 2
    assert [s for s, _ in got] == list(range(1, len(got) + 1)) and got[-1][1] == "task.finished"
    assert got == [(e.seq, e.type) async for e in aclient.events(task.id)]


async def test_run_answers_from_an_async_callback(aclient: AsyncClient) -> None:
    async def on_ask(q: droidpilot.Question) -> str:
        await asyncio.sleep(0)
        return q.options[0] if q.options else "yes"

    done = await aclient.run(instruction="ask", agent=replay(ASK, HOME), on_ask=on_ask)
    assert done.status == "succeeded"
    assert [i.answer for i in await aclient.interventions(done.id)] == ["yes"]


async def test_the_coordinator_contract(aclient: AsyncClient) -> None:
    request = droidpilot.MobileTaskRequest(
        task_id=f"t-{uuid.uuid4()}", ai_prompt="ask, then home", agent=replay(ASK, HOME), max_steps=5
    )
    result = await aclient.run_mobile_task(request, on_ask=lambda q: "yes")
    assert (result.task_id, result.status, result.reason) == (request.task_id, "success", "completed")


async def test_errors_and_take_over(aclient: AsyncClient, server_url: str) -> None:
    with pytest.raises(droidpilot.ValidationError) as bad:
        await aclient.submit(instruction="x", max_steps=0)
    assert "max_steps" in bad.value.message and bad.value.hint
    async with AsyncClient(server_url, token="wrong-token-0123456789") as wrong:
        with pytest.raises(droidpilot.AuthenticationError):
            await wrong.get(str(uuid.uuid4()))
    task = await aclient.submit(instruction="hold", agent=replay(*waits(3, 500), HOME))
    while (await aclient.get(task.id)).status != "running":
        await asyncio.sleep(0.02)
    await aclient.pause(task.id)
    while (await aclient.get(task.id)).status != "paused":
        await asyncio.sleep(0.02)
    assert (await aclient.act(task.id, HOME)).intervention.kind == "manual_action"
    await aclient.resume(task.id)
    assert (await aclient.wait(task.id, timeout=60)).status == "succeeded"


async def test_scripts_devices_and_watch(aclient: AsyncClient) -> None:
    done = await aclient.run(instruction="settings", agent=replay(SETTINGS))
    script = await aclient.scripts.record(done.id)
    assert [v.version for v in await aclient.scripts.versions(script.id)] == [1]
    run = await aclient.scripts.run(script.id)
    assert "sim-1" in {d.id for d in await aclient.devices.list()}
    assert (await aclient.devices.screen("sim-1")).summary
    tasks = [run.id, (await aclient.submit(instruction="ask", agent=replay(ASK))).id]
    finished: set[str] = set()
    async with aclient.watch(tasks) as watch:
        async for event in watch:
            if event.type == "task.ask_user":
                await watch.cancel(event.task_id)
            if event.type == "task.finished":
                finished.add(event.task_id)
    assert finished == set(tasks)
    assert (await aclient.get(tasks[1])).status == "cancelled"


async def test_a_broken_websocket_is_resumed(aclient: AsyncClient, server_url: str) -> None:
    ids = [(await aclient.submit(instruction=f"aws {i}", agent=replay(*waits(6), HOME))).id for i in range(2)]
    seen: dict[str, list[int]] = {}
    with Proxy(int(server_url.rsplit(":", 1)[1]), cut_after_bytes=3000, cuts=1) as proxy:
        async with AsyncClient(proxy.url, token=TOKEN) as through, through.watch(ids) as watch:
            async for event in watch:
                seen.setdefault(event.task_id, []).append(event.seq)
            assert watch.reconnects == 1 and proxy.connections == 2
    for task_id in ids:
        assert seen[task_id] == [e.seq async for e in aclient.events(task_id)]


async def test_a_stream_refused_for_too_many_streams_is_retried(tmp_path: Path) -> None:
    with serve(tmp_path, DROIDPILOT_SERVER__MAX_STREAMS_PER_TOKEN="1") as url:
        async with AsyncClient(url, token=TOKEN) as c:
            first = await c.submit(instruction="holds the one stream", agent=replay(*waits(8, 200)))
            second = await c.submit(instruction="waits for it", agent=replay(HOME))
            holding = c.events(first.id).__aiter__()
            assert (await holding.__anext__()).type == "task.queued"
            waiting = c.events(second.id)
            reader = asyncio.create_task(_types(waiting))
            await asyncio.sleep(0.5)
            assert [e.type async for e in holding][-1] == "task.finished"
            got = await asyncio.wait_for(reader, 60)
            assert waiting.reconnects >= 1 and got[-1] == "task.finished"


async def _types(stream: droidpilot.AsyncEventStream) -> list[str]:
    return [e.type async for e in stream]
