"""Scripts and devices through the sync client, and many tasks over the WebSocket."""

from __future__ import annotations

import pytest
from conftest import TOKEN, replay, waits
from proxy import Proxy

import droidpilot
from droidpilot import Client

HOME = {"action": "home"}
SETTINGS = {"action": "launch_app", "package": "com.android.settings"}
ASK = {"action": "ask_user", "question": "Go on?", "options": ["yes", "no"]}


def test_scripts_record_version_run_and_maestro(client: Client) -> None:
    done = client.run(instruction="settings then home", agent=replay(SETTINGS, HOME))
    recorded = client.scripts.record(done.id, name="settings-home")
    assert recorded.version == 1 and recorded.source == {"kind": "task", "task_id": done.id}
    assert recorded.name == "settings-home" and len(recorded.steps) == 2
    edited = recorded.document()
    v2 = client.scripts.update(recorded.id, {**edited.to_dict(), "goal": "settings, then home again"})
    assert v2.version == 2 and v2.id == recorded.id
    assert [v.version for v in client.scripts.versions(recorded.id)] == [1, 2]
    assert client.scripts.get(recorded.id, version=1).goal == recorded.goal
    assert client.scripts.export(recorded.id).goal == "settings, then home again"
    assert recorded.id in {s.id for s in client.scripts.list(limit=100).scripts}

    run = client.scripts.run(recorded.id, device_id="sim-1")
    assert client.wait(run.id, timeout=60).status == "succeeded"
    assert [a["action_type"] for a in client.result(run.id).actions_executed] == ["launch_app", "key"]

    flow = client.scripts.export_maestro(recorded.id)
    assert "launchApp" in flow and "pressKey: Home" in flow
    imported = client.scripts.import_maestro(flow)
    assert imported.source["kind"] == "maestro" and len(imported.steps) == 2
    with pytest.raises(droidpilot.ValidationError) as e:
        client.scripts.import_maestro("appId: com.example\n---\n- flyToTheMoon: true\n")
    assert e.value.code and e.value.hint
    client.scripts.delete(imported.id)
    with pytest.raises(droidpilot.NotFoundError):
        client.scripts.get(imported.id)


def test_a_stored_script_document_runs(client: Client) -> None:
    script = droidpilot.Script(
        name="home-only", goal="go home", steps=[{"action": "key", "parameters": {"key": "home"}}]
    )
    stored = client.scripts.create(script)
    assert stored.version == 1 and stored.source == {"kind": "uploaded"}
    assert client.wait(client.scripts.run(stored.id).id, timeout=60).status == "succeeded"


def test_a_stored_workspace_is_versioned_downloaded_and_run(client: Client) -> None:
    import io
    import time
    import zipfile

    flow = "appId: com.android.settings\ntags: [smoke]\n---\n- launchApp\n"
    v1 = client.workspaces.create("py-suite", {"home.yaml": flow})
    assert v1.version == 1 and v1.source == {"kind": "uploaded"}
    assert [f.path for f in v1.config.flows] == ["home.yaml"] and v1.config.tags == ["smoke"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("suite/home.yaml", flow)
        z.writestr("suite/again.yaml", flow)
    v2 = client.workspaces.add_version_zip(v1.id, buf.getvalue())
    assert v2.version == 2 and v2.name == "py-suite"
    assert [v.version for v in client.workspaces.versions(v1.id)] == [1, 2]
    assert client.workspaces.version(v1.id, 1).contents == {"home.yaml": flow}
    with zipfile.ZipFile(io.BytesIO(client.workspaces.download(v1.id, 2))) as z:
        assert sorted(z.namelist()) == ["again.yaml", "home.yaml"]
    assert v1.id in {w.id for w in client.workspaces.list(limit=100).workspaces}
    with pytest.raises(droidpilot.ValidationError) as e:
        client.workspaces.add_version(v1.id, {"bad.yaml": "appId: a\n---\n- flyToTheMoon: true\n"})
    assert "bad.yaml line 3" in str(e.value)

    run = client.flow_runs.start_workspace(v1.id, version=1, devices=["sim-1"])
    assert run.workspace is not None and (run.workspace.id, run.workspace.version) == (v1.id, 1)
    for _ in range(600):
        if client.flow_runs.get(run.id).status != "running":
            break
        time.sleep(0.1)
    assert client.flow_runs.get(run.id).status == "passed"
    client.workspaces.delete(v1.id)
    with pytest.raises(droidpilot.NotFoundError):
        client.workspaces.get(v1.id)


def test_devices_add_act_read_and_remove(client: Client) -> None:
    added = client.devices.add(sim="sim-py")
    assert added.id == "sim-py" and added.backend == "sim"
    assert "sim-py" in {d.id for d in client.devices.list()}
    assert client.devices.get("sim-py").state == "available"
    acted = client.devices.act("sim-py", SETTINGS)
    assert acted.duration_ms >= 0 and acted.action["action"] == "launch_app"
    screen = client.devices.screen("sim-py")
    assert screen.app_package == "com.android.settings" and screen.actionable_elements
    assert screen.actionable_elements[0].selector
    assert client.devices.screenshot("sim-py").startswith(b"\x89PNG")
    assert client.devices.screenshot("sim-py", format="jpeg", scale=0.5).startswith(b"\xff\xd8")
    assert "<hierarchy" in client.devices.hierarchy("sim-py")
    assert "com.android.settings" in {a.package for a in client.devices.apps("sim-py")}
    with pytest.raises(droidpilot.ValidationError) as bad:
        client.devices.act("sim-py", {"action": "tap", "coordinate": [540, 1200]})
    assert "coordinate" in bad.value.message and "pixel" in bad.value.hint
    client.devices.remove("sim-py")
    with pytest.raises(droidpilot.NotFoundError) as gone:
        client.devices.get("sim-py")
    assert gone.value.code == "device_not_found"


def test_a_held_phone_is_driven_inspected_and_recorded(client: Client) -> None:
    client.devices.add(sim="sim-hold")
    try:
        hold = client.devices.take_control("sim-hold", by="coordinator")
        assert hold["holder"] and hold["control_id"]
        with pytest.raises(droidpilot.ConflictError):
            client.devices.take_control("sim-hold", by="someone else")
        client.devices.control_act("sim-hold", hold["control_id"], SETTINGS)
        assert client.devices.keep_control("sim-hold", hold["control_id"])["steps"] == 1
        seen = client.devices.inspect("sim-hold")
        assert seen["width"] > 0 and seen["nodes"]
        script = client.devices.recording("sim-hold", hold["control_id"], name="open settings")
        assert [s["action"] for s in script["steps"]] == ["launch_app"]
        client.devices.release_control("sim-hold", hold["control_id"])
        assert client.devices.get("sim-hold").state == "available"
    finally:
        client.devices.remove("sim-hold", force=True)


def test_many_tasks_over_one_websocket_with_an_answer(client: Client) -> None:
    asking = client.submit(instruction="asks", agent=replay(ASK, HOME))
    quiet = [client.submit(instruction=f"w{i}", agent=replay(*waits(3), HOME)).id for i in range(2)]
    seen: dict[str, list[int]] = {}
    with client.watch([asking.id, *quiet]) as watch:
        for event in watch:
            seen.setdefault(event.task_id, []).append(event.seq)
            question = event.question()
            if question is not None:
                watch.answer(event.task_id, "yes", question.prompt_id)
        assert any(r["type"] == "answered" for r in watch.state.replies)
    assert set(seen) == {asking.id, *quiet}
    for seqs in seen.values():
        assert seqs == list(range(1, len(seqs) + 1))
    assert client.get(asking.id).status == "succeeded"
    assert client.interventions(asking.id)[0].answered_by == "websocket"


def test_health_presets_and_metrics(client: Client) -> None:
    assert client.health().status == "ok"
    assert client.ready().status
    presets = client.presets()
    assert "replay" in presets.agent_kinds
    assert "droidpilot" in client.metrics()


def test_a_broken_websocket_is_reopened_and_resumed_per_task(client: Client, server_url: str) -> None:
    ids = [client.submit(instruction=f"ws {i}", agent=replay(*waits(6), HOME)).id for i in range(2)]
    seen: dict[str, list[int]] = {}
    with Proxy(int(server_url.rsplit(":", 1)[1]), cut_after_bytes=3000, cuts=1) as proxy:
        with Client(proxy.url, token=TOKEN) as through, through.watch(ids) as watch:
            for event in watch:
                seen.setdefault(event.task_id, []).append(event.seq)
            assert watch.reconnects == 1 and proxy.connections == 2
    for task_id in ids:
        every = [e.seq for e in client.events(task_id)]
        assert seen[task_id] == every, "each task's events once, in order, none missed"


def test_an_error_on_the_websocket_raises_and_the_watch_goes_on(client: Client) -> None:
    task = client.submit(instruction="asks", agent=replay(ASK, HOME))
    with client.watch([task.id]) as watch:
        types: list[str] = []
        while True:
            try:
                event = next(watch)
            except StopIteration:
                break
            except droidpilot.APIError as e:
                assert e.code and e.hint and e.status is None
                types.append(f"error:{e.code}")
                watch.answer(task.id, "yes")
                continue
            types.append(event.type)
            if event.type == "task.ask_user":
                watch.answer(task.id, "yes", prompt_id="p-not-the-open-one")
    assert types[-1] == "task.finished"
    assert len([t for t in types if t.startswith("error:")]) == 1
    assert client.get(task.id).status == "succeeded"


def test_follow_gives_up_after_its_timeout(client: Client) -> None:
    task = client.submit(instruction="asks, nobody answers", agent=replay(ASK))
    with pytest.raises(droidpilot.WaitTimeout) as e:
        client.follow(task.id, timeout=1.0)
    assert e.value.task.status == "waiting_for_user"
    client.cancel(task.id)
