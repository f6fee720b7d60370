"""The sync client against the live server: tasks from submission to result."""

from __future__ import annotations

import io
import itertools
import json
import tarfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import TOKEN, replay, serve, waits
from proxy import Proxy

import droidpilot
from droidpilot import Client

HOME = {"action": "home"}
SETTINGS = {"action": "launch_app", "package": "com.android.settings"}
ASK = {"action": "ask_user", "question": "Go home?", "options": ["yes", "no"]}


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _until(client: Client, task_id: str, status: str) -> None:
    for _ in range(400):
        if client.get(task_id).status == status:
            return
        time.sleep(0.025)
    raise AssertionError(f"{task_id} never became {status}: {client.get(task_id).status}")


def test_submit_then_wait_gives_the_ended_task_and_its_result(client: Client) -> None:
    task = client.submit(instruction="open Settings, then home", agent=replay(SETTINGS, HOME))
    assert isinstance(task, droidpilot.Task)
    assert task.status == "queued" and task.agent == replay(SETTINGS, HOME)
    done = client.wait(task.id, timeout=60)
    assert done.id == task.id and done.status == "succeeded" and done.ended
    # Each action is a step, and the replay's closing `finish` one more.
    assert done.steps == 3 and done.finished_at is not None and done.assigned_device == "sim-1"
    result = client.result(task.id)
    assert result.success and result.reason == "completed" and result.steps_taken == 3
    assert [a["action_type"] for a in result.actions_executed] == ["launch_app", "key"]


def test_events_stream_to_the_end_and_resume_after_a_given_seq(client: Client) -> None:
    task = client.submit(instruction="home", agent=replay(HOME))
    events = list(client.events(task.id))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "task.queued" and events[-1].type == "task.finished"
    assert events[-1].payload["status"] == "succeeded"
    assert all(e.task_id == task.id for e in events)
    later = list(client.events(task.id, since=3))
    assert [(e.seq, e.type) for e in later] == [(e.seq, e.type) for e in events[3:]]
    assert list(client.events(task.id, since=events[-1].seq)) == []


def test_a_broken_event_stream_is_resumed_with_no_event_missed_or_repeated(
    client: Client, server_url: str
) -> None:
    task = client.submit(instruction="ten waits", agent=replay(*waits(10), HOME))
    with Proxy(_port(server_url), cut_after_data=5, cuts=2) as proxy:
        with Client(proxy.url, token=TOKEN) as through:
            stream = through.events(task.id)
            got = [(e.seq, e.type) for e in stream]
    assert stream.reconnects >= 2, "the proxy cut the stream twice"
    assert [s for s, _ in got] == list(range(1, len(got) + 1))
    assert got[-1][1] == "task.finished"
    assert got == [(e.seq, e.type) for e in client.events(task.id)]


def test_run_answers_each_question_from_a_callback(client: Client) -> None:
    asked: list[droidpilot.Question] = []

    def on_ask(q: droidpilot.Question) -> str:
        asked.append(q)
        return "yes" if len(asked) == 1 else "no"

    done = client.run(
        instruction="ask twice", agent=replay(ASK, {**ASK, "question": "Really?"}, HOME), on_ask=on_ask
    )
    assert done.status == "succeeded"
    assert [q.question for q in asked] == ["Go home?", "Really?"]
    assert asked[0].options == ["yes", "no"] and asked[0].task_id == done.id
    answers = [(i.question, i.answer, i.answered_by) for i in client.interventions(done.id)]
    assert answers == [("Go home?", "yes", "rest"), ("Really?", "no", "rest")]


def test_follow_asks_only_questions_still_open(client: Client) -> None:
    done = client.run(instruction="asks", agent=replay(ASK, HOME), on_ask=lambda q: "yes")
    asked: list[str] = []
    again = client.follow(done.id, lambda q: asked.append(q.prompt_id) or "no")
    assert again.status == "succeeded" and asked == [], "an answered question is not asked again"


def test_take_over_pause_act_resume(client: Client) -> None:
    task = client.submit(instruction="hold on", agent=replay(*waits(3, 500), HOME))
    _until(client, task.id, "running")
    client.pause(task.id, by="alice")
    _until(client, task.id, "paused")
    acted = client.act(task.id, {"action": "back"}, by="alice")
    assert acted.intervention.kind == "manual_action" and acted.intervention.by == "alice"
    assert client.resume(task.id, by="alice").status == "running"
    assert client.wait(task.id, timeout=60).status == "succeeded"
    by_person = [s for s in client.steps(task.id) if s.by == "alice"]
    assert len(by_person) == 1 and by_person[0].action == {"action": "key", "key": "back"}


def test_cancel_ends_a_running_task(client: Client) -> None:
    task = client.submit(instruction="long", agent=replay(*waits(40, 250)))
    _until(client, task.id, "running")
    cancelled = client.cancel(task.id)
    assert cancelled.task.id == task.id and cancelled.outcome
    assert client.wait(task.id, timeout=30).status == "cancelled"
    assert client.result(task.id).reason == "cancelled"


def test_wait_times_out_with_the_task_as_last_seen(client: Client) -> None:
    task = client.submit(instruction="asks, nobody answers", agent=replay(ASK))
    with pytest.raises(droidpilot.WaitTimeout) as e:
        client.wait(task.id, timeout=0.5)
    assert e.value.task.id == task.id and not e.value.task.ended
    client.cancel(task.id)


def test_list_pages_through_every_task(client: Client) -> None:
    ids = [client.submit(instruction=f"page {i}", agent=replay(HOME)).id for i in range(3)]
    first = client.list(limit=2)
    assert len(first.tasks) == 2 and first.next_cursor
    assert [t.id for t in first.tasks] == ids[::-1][:2], "newest first"
    second = client.list(limit=2, cursor=first.next_cursor)
    assert [t.id for t in second.tasks][:1] == ids[::-1][2:]
    seen = list(itertools.islice(client.iter_tasks(page_size=2), 3))
    assert [t.id for t in seen] == ids[::-1]
    for t in ids:
        client.wait(t, timeout=60)
    succeeded = itertools.islice(client.iter_tasks(status="succeeded", page_size=2), 3)
    assert {t.id for t in succeeded} == set(ids)


def test_steps_screenshots_trajectory_and_export(client: Client) -> None:
    task = client.run(instruction="settings", agent=replay(SETTINGS))
    steps = client.steps(task.id)
    assert [s.n for s in steps] == [1, 2] and steps[0].outcome.status == "ok"
    assert steps[0].screen is not None and steps[0].screen.elements
    assert client.screenshot(task.id, 1).startswith(b"\x89PNG")
    trajectory = client.trajectory(task.id)
    assert trajectory.format == "droidpilot.trajectory" and trajectory.task.id == task.id
    assert trajectory.result is not None and trajectory.result.status == "success"
    with tarfile.open(fileobj=io.BytesIO(client.export(task.id)), mode="r:gz") as tar:
        names = tar.getnames()
        member = tar.extractfile(f"{task.id}/trajectory.json")
        assert member is not None
        assert json.load(member)["task"]["id"] == task.id
    assert f"{task.id}/screenshots/0001.png" in names
    assert client.replay_gif(task.id, width=120).startswith(b"GIF8")
    assert client.replay_mp4(task.id, width=120)[4:8] == b"ftyp"


def test_the_coordinator_contract(client: Client) -> None:
    request = droidpilot.MobileTaskRequest(
        task_id="task_1",
        ai_prompt="open Settings then go home",
        device_id="sim-1",
        session_id="session_xyz",
        max_steps=5,
        timeout_seconds=30,
        agent=replay(SETTINGS, HOME),
    )
    result = client.run_mobile_task(request)
    assert isinstance(result, droidpilot.MobileTaskResult)
    assert (result.task_id, result.status, result.steps_taken) == ("task_1", "success", 3)
    assert result.session_id == "session_xyz" and result.device_id == "sim-1"
    assert [a["action_type"] for a in result.actions_executed] == ["launch_app", "key"]
    assert result.completion_reason
    over = client.run_mobile_task(
        droidpilot.MobileTaskRequest(ai_prompt="too long", max_steps=1, agent=replay(SETTINGS, HOME))
    )
    assert (over.status, over.reason) == ("failed", "max_steps_exceeded")
    assert over.completion_reason.startswith("max_steps_exceeded")


def test_errors_are_exceptions_with_the_servers_code_and_hint(client: Client, server_url: str) -> None:
    with pytest.raises(droidpilot.ValidationError) as bad:
        client.submit(instruction="x", bogus=1)
    assert bad.value.status == 422 and "bogus" in bad.value.message and bad.value.hint
    with pytest.raises(droidpilot.NotFoundError) as missing:
        client.get(str(uuid.uuid4()))
    assert missing.value.status == 404 and missing.value.code and missing.value.hint
    done = client.run(instruction="home", agent=replay(HOME))
    with pytest.raises(droidpilot.ConflictError) as conflict:
        client.answer(done.id, "yes")
    assert conflict.value.status == 409 and conflict.value.code and conflict.value.hint
    with Client(server_url) as anonymous:
        with pytest.raises(droidpilot.AuthenticationError) as denied:
            anonymous.list()
    assert denied.value.status == 401 and denied.value.code and denied.value.hint
    assert isinstance(denied.value, droidpilot.APIError)


def test_the_token_comes_from_the_environment(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DROIDPILOT_TOKEN", TOKEN)
    monkeypatch.setenv("DROIDPILOT_URL", server_url)
    with Client() as c:
        assert c.list(limit=1).tasks is not None


def test_idempotent_calls_are_retried_and_a_submit_is_not(client: Client, server_url: str) -> None:
    task = client.run(instruction="home", agent=replay(HOME))
    with Proxy(_port(server_url), drop_first=2) as proxy:
        with Client(proxy.url, token=TOKEN, retries=2) as flaky:
            assert flaky.get(task.id).id == task.id
        assert proxy.connections == 3
    marker = f"not twice {uuid.uuid4()}"
    with Proxy(_port(server_url), drop_first=1) as proxy:
        with Client(proxy.url, token=TOKEN, retries=2) as flaky:
            with pytest.raises(droidpilot.TransportError):
                flaky.submit(instruction=marker, agent=replay(HOME))
        assert proxy.connections == 1
    assert not [t for t in client.iter_tasks() if t.instruction == marker]
    with Proxy(_port(server_url), drop_first=5) as proxy:
        with Client(proxy.url, token=TOKEN, retries=1) as flaky:
            with pytest.raises(droidpilot.TransportError):
                flaky.get(task.id)
        assert proxy.connections == 2


def test_submit_takes_every_agent_kind(client: Client) -> None:
    """The kinds that need no model run; those whose model needs a key the test server
    lacks are refused with the server's code and a hint that says what to set."""
    assert client.run(instruction="replay", agent=replay(HOME)).status == "succeeded"
    script = {"name": "home", "goal": "go home", "steps": [{"action": "key", "parameters": {"key": "home"}}]}
    assert client.run(instruction="script", agent={"kind": "script", "script": script}).status == "succeeded"
    flow = "appId: com.android.settings\n---\n- launchApp\n- pressKey: Home\n"
    assert client.run(instruction="flow", agent={"kind": "flow", "flow": flow}).status == "succeeded"
    for agent in (
        {"kind": "navigator"},
        {"kind": "planned"},
        {"kind": "chain", "agents": [{"kind": "navigator"}, {"kind": "navigator"}]},
    ):
        with pytest.raises(droidpilot.APIError) as e:
            client.submit(instruction="needs a model", agent=agent)
        assert e.value.code == "missing_model_key" and "OPENAI_API_KEY" in e.value.hint, agent
    vision = client.submit(instruction="vision", agent={"kind": "vision"})
    assert vision.agent == {"kind": "vision"}
    client.cancel(vision.id)
    assert client.wait(vision.id, timeout=60).ended


def test_a_stream_refused_for_too_many_streams_is_retried(tmp_path: Path) -> None:
    with serve(tmp_path, DROIDPILOT_SERVER__MAX_STREAMS_PER_TOKEN="1") as url, Client(url, token=TOKEN) as c:
        first = c.submit(instruction="holds the one stream", agent=replay(*waits(8, 200)))
        second = c.submit(instruction="waits for it", agent=replay(HOME))
        holding = iter(c.events(first.id))
        assert next(holding).type == "task.queued", "the one stream is open"
        waiting = c.events(second.id)
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.extend(e.type for e in waiting))
        reader.start()
        time.sleep(0.5)
        assert [e.type for e in holding][-1] == "task.finished"
        reader.join(60)
        assert waiting.reconnects >= 1, "the second stream was refused (429) at first"
        assert got[0] == "task.queued" and got[-1] == "task.finished"


def test_a_request_that_gets_no_answer_times_out(client: Client, server_url: str) -> None:
    with (
        Proxy(_port(server_url), silent=True) as proxy,
        Client(proxy.url, token=TOKEN, timeout=0.3, retries=1) as c,
    ):
        with pytest.raises(droidpilot.TransportError) as e:
            c.get(str(uuid.uuid4()))
        assert "Timeout" in str(e.value) and proxy.connections == 2, "a GET is tried twice"
        with pytest.raises(droidpilot.TransportError):
            c.submit(instruction="never answered", agent=replay(HOME))
        assert proxy.connections == 3, "a POST is tried once"
