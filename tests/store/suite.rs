//! The `Store` contract, once for both backends: `both!(name)` makes `name::sqlite` and
//! `name::postgres`, each calling `name(store)` on a fresh database.

use std::sync::Arc;

use droidpilot::domain::{
    Action, ActionParser, ActionableElement, Bounds, ElementAction, Intervention, InterventionKind,
    NewTask, Step, StepOutcome, StepScreen, StepStatus, StepTimings, TaskEvent, TaskId, TaskSpec,
    TaskStatus,
};
use droidpilot::script::{Script, ScriptSource};
use droidpilot::store::{Artifact, CancelOutcome, StepCommit, Store, StoreError, TaskFilter};

/// Runs `$name(store)` on a fresh SQLite file and on a fresh PostgreSQL database.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let dir = tempfile::tempdir().unwrap();
                let s = droidpilot::store::SqliteStore::open(&dir.path().join("db.sqlite"))
                    .await
                    .unwrap();
                let s: std::sync::Arc<dyn droidpilot::store::Store> = std::sync::Arc::new(s);
                super::$name(s.clone()).await;
                s.close().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(db) = crate::common::pg::FreshDb::create().await else {
                    return;
                };
                let s = droidpilot::store::PostgresStore::connect(&db.url, 4)
                    .await
                    .unwrap();
                let s: std::sync::Arc<dyn droidpilot::store::Store> = std::sync::Arc::new(s);
                super::$name(s.clone()).await;
                s.close().await;
                db.drop_now().await;
            }
        }
    };
}

type S = Arc<dyn Store>;

fn spec(i: &str) -> TaskSpec {
    TaskSpec::parse(NewTask {
        instruction: Some(i.into()),
        ..Default::default()
    })
    .unwrap()
}

fn doc(name: &str) -> Script {
    Script::from_json(&serde_json::json!({
        "name": name, "goal": "g",
        "steps": [{"action": "tap", "selector": "#ok"}]
    }))
    .unwrap()
}

fn typed_step(task: TaskId, n: u32, action: Option<Action>) -> Step {
    Step {
        task_id: task,
        n,
        started_at: "2026-01-02T03:04:05.123Z".parse().unwrap(),
        thinking: Some("t".into()),
        action,
        raw: Some("{\"action\": \"x\"}".into()),
        rejected: None,
        outcome: StepOutcome {
            status: StepStatus::Ok,
            error: None,
            screen_changed: Some(true),
            detail: None,
        },
        screen: Some(StepScreen {
            summary: "s".into(),
            app: Some("com.app".into()),
            layout_hash: Some("00000000000000ff".into()),
            size: Some([1080, 2400]),
            elements: vec![ActionableElement {
                element_id: 0,
                selector: "#ok".into(),
                alternative_selectors: vec![":text(\"OK\")".into()],
                kind: "Button".into(),
                text: "OK".into(),
                actions: vec![ElementAction::Click],
                bounds: Bounds::new(0, 0, 100, 50),
                source: Default::default(),
            }],
            ..Default::default()
        }),
        screenshot: None,
        timings: StepTimings::default(),
        tokens_in: 1,
        tokens_out: 2,
        tokens_cached: 1,
        cost_usd: 0.25,
        model_calls: 1,
        replay: None,
        calls: Vec::new(),
        annotations: Vec::new(),
        by: None,
    }
}

fn tap() -> Action {
    ActionParser::new()
        .parse(&serde_json::json!({"action": "tap", "selector": "#ok"}))
        .unwrap()
}

both!(typed_steps_round_trip_with_custom_and_rejected_actions);
async fn typed_steps_round_trip_with_custom_and_rejected_actions(store: S) {
    let task = store.create_task(spec("t")).await.unwrap();
    let mut parser = ActionParser::new();
    parser.register("stamp").unwrap();
    let custom = parser
        .parse(&serde_json::json!({"action": "stamp", "ink": "red"}))
        .unwrap();
    let mut rejected = typed_step(task.id, 3, None);
    rejected.outcome.status = StepStatus::Rejected;
    rejected.rejected = Some(serde_json::json!({"action": "tap", "coordinate": [7, 7]}));
    // A person's step during a take-over keeps who took it.
    let mut person = typed_step(task.id, 1, Some(tap()));
    person.by = Some("alice".into());
    let steps = [
        person,
        typed_step(task.id, 2, Some(custom.clone())),
        rejected,
    ];
    for s in &steps {
        store.append_step(s).await.unwrap();
    }
    let back = store.steps(task.id).await.unwrap();
    assert_eq!(back, steps, "every field comes back as written");
    assert!(matches!(&back[1].action, Some(Action::Custom(c)) if c.name == "stamp"));
    assert_eq!(store.step(task.id, 2).await.unwrap(), steps[1]);
    assert!(matches!(
        store.step(task.id, 9).await,
        Err(StoreError::StepNotFound { n: 9, .. })
    ));
    let t = store.get_task(task.id).await.unwrap();
    assert_eq!(
        (
            t.steps,
            t.tokens_in,
            t.tokens_out,
            t.tokens_cached,
            t.model_calls
        ),
        (3, 3, 6, 3, 3)
    );
    assert!((t.cost_usd - 0.75).abs() < 1e-9);
}

both!(a_step_committed_twice_is_recorded_and_counted_once);
async fn a_step_committed_twice_is_recorded_and_counted_once(store: S) {
    let task = store.create_task(spec("t")).await.unwrap();
    let step = typed_step(task.id, 1, Some(tap()));
    store.append_step(&step).await.unwrap();
    store
        .append_step(&step)
        .await
        .expect("a retried commit is not an error");
    assert_eq!(store.steps(task.id).await.unwrap().len(), 1);
    let t = store.get_task(task.id).await.unwrap();
    assert_eq!((t.steps, t.tokens_in), (1, 1), "totals counted once");
}

both!(every_field_round_trips);
async fn every_field_round_trips(s: S) {
    let mut sp = spec("full");
    sp.device = Some(droidpilot::domain::task::DeviceConstraints {
        backend: Some("adb".into()),
        model: Some("Pixel 7".into()),
        package: Some("com.x".into()),
    });
    sp.agent = Some(serde_json::json!({"kind": "navigator"}));
    sp.metadata = Some(serde_json::json!({"k": [1, 2.5, "x"], "z": null, "a": {"b": true}}));
    sp.external_id = Some("ext".into());
    sp.session_id = Some("sess".into());
    sp.device_id = Some("sim-1".into());
    sp.webhook_url = Some("https://example.com/hook".into());
    sp.record = true;
    sp.priority = -3;
    sp.max_tokens = Some(50_000);
    sp.max_cost_usd = Some(0.25);
    let t = s.create_task(sp.clone()).await.unwrap();
    assert_eq!(t.spec, sp);
    assert_eq!(t.status, TaskStatus::Queued);
    assert_eq!(s.get_task(t.id).await.unwrap(), t);
    assert!(matches!(
        s.get_task(TaskId::new()).await,
        Err(StoreError::TaskNotFound(_))
    ));
}

/// A stored value this build cannot read is corrupt data naming its column, on both
/// backends (not a database failure, which a caller retries or reports as an outage).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_that_does_not_read_is_reported_as_corrupt_by_name() {
    fn names(r: Result<droidpilot::domain::Task, StoreError>, col: &str) {
        match r {
            Err(StoreError::Corrupt(m)) => {
                assert!(m.starts_with(&format!("column {col}: ")), "{m}")
            }
            other => panic!("expected corrupt `{col}`, got {other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let s = droidpilot::store::SqliteStore::open(&dir.path().join("db.sqlite"))
        .await
        .unwrap();
    let t = s.create_task(spec("x")).await.unwrap();
    sqlx::query("UPDATE tasks SET constraints = '[1]', agent = 'not json' WHERE id = ?")
        .bind(t.id.to_string())
        .execute(s.pool())
        .await
        .unwrap();
    names(s.get_task(t.id).await, "constraints");
    s.close().await;
    let Some(db) = crate::common::pg::FreshDb::create().await else {
        return;
    };
    let p = droidpilot::store::PostgresStore::connect(&db.url, 4)
        .await
        .unwrap();
    let t = p.create_task(spec("x")).await.unwrap();
    sqlx::query("UPDATE tasks SET constraints = '[1]'::jsonb WHERE id = $1")
        .bind(t.id.to_string())
        .execute(p.pool())
        .await
        .unwrap();
    names(p.get_task(t.id).await, "constraints");
    p.close().await;
    db.drop_now().await;
}

both!(event_seq_is_gapless_per_stream_under_concurrent_writers);
async fn event_seq_is_gapless_per_stream_under_concurrent_writers(s: S) {
    let mut handles = Vec::new();
    for i in 0..60 {
        let s = s.clone();
        let stream = if i % 2 == 0 { "a" } else { "b" };
        handles.push(tokio::spawn(async move {
            s.append_event(
                stream,
                TaskEvent::from_parts("x", serde_json::json!({"i": i})),
            )
            .await
            .unwrap()
            .seq
        }));
    }
    let mut handed_out = Vec::new();
    for h in handles {
        handed_out.push(h.await.unwrap());
    }
    handed_out.sort();
    let expect: Vec<i64> = (1..=30).flat_map(|i| [i, i]).collect();
    assert_eq!(handed_out, expect, "each writer got its own seq");
    for stream in ["a", "b"] {
        let seqs: Vec<i64> = s
            .events_since(stream, 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (1..=30).collect::<Vec<_>>(), "stream {stream}");
    }
    let tail = s.events_since("a", 28, 100).await.unwrap();
    assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![29, 30]);
    assert_eq!(tail[0].event.payload()["i"].as_i64().unwrap() % 2, 0);
    assert_eq!(s.events_since("a", 0, 5).await.unwrap().len(), 5, "limit");
    assert!(s.events_since("nobody", 0, 5).await.unwrap().is_empty());
}

both!(a_queued_task_is_started_exactly_once);
async fn a_queued_task_is_started_exactly_once(s: S) {
    let t = s.create_task(spec("a")).await.unwrap();
    let mut handles = Vec::new();
    for i in 0..8 {
        let s = s.clone();
        handles.push(tokio::spawn(async move {
            s.start_task(t.id, &format!("dev-{i}")).await.unwrap()
        }));
    }
    let mut wins = 0;
    for h in handles {
        wins += h.await.unwrap() as usize;
    }
    assert_eq!(wins, 1, "one claim wins");
    let t = s.get_task(t.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::Running);
    assert!(t.started_at.is_some() && t.assigned_device.is_some());
    assert!(!s.start_task(t.id, "again").await.unwrap());
}

both!(queued_tasks_come_by_priority_then_age);
async fn queued_tasks_come_by_priority_then_age(s: S) {
    let mut ids = Vec::new();
    for p in [0, 5, 0, 5] {
        let mut sp = spec("q");
        sp.priority = p;
        ids.push(s.create_task(sp).await.unwrap().id);
    }
    let started = s.create_task(spec("r")).await.unwrap();
    assert!(s.start_task(started.id, "d").await.unwrap());
    let q: Vec<TaskId> = s
        .queued_tasks(10)
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(q, [ids[1], ids[3], ids[0], ids[2]]);
    assert_eq!(s.queued_tasks(1).await.unwrap()[0].id, ids[1]);
}

both!(task_pages_walk_newest_first_and_filter_by_status);
async fn task_pages_walk_newest_first_and_filter_by_status(s: S) {
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(s.create_task(spec(&format!("t{i}"))).await.unwrap().id);
    }
    s.finish_task(ids[2], TaskStatus::Failed, Some("x"), None)
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = s
            .list_tasks(TaskFilter {
                limit: 2,
                cursor: cursor.clone(),
                ..Default::default()
            })
            .await
            .unwrap();
        seen.extend(page.tasks.iter().map(|t| t.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    let failed = s
        .list_tasks(TaskFilter {
            status: Some(TaskStatus::Failed),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        failed.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        [ids[2]]
    );
    assert!(failed.next_cursor.is_none());
}

both!(cursors_from_elsewhere_are_refused);
async fn cursors_from_elsewhere_are_refused(s: S) {
    s.create_task(spec("a")).await.unwrap();
    for bad in ["zzz", "bm90LWEtdXVpZA", ""] {
        let r = s
            .list_tasks(TaskFilter {
                limit: 10,
                cursor: Some(bad.into()),
                ..Default::default()
            })
            .await;
        assert!(matches!(r, Err(StoreError::InvalidCursor(_))), "{bad}");
    }
}

both!(cancel_ends_a_queued_task_and_only_flags_a_running_one);
async fn cancel_ends_a_queued_task_and_only_flags_a_running_one(s: S) {
    let queued = s.create_task(spec("a")).await.unwrap();
    let (t, outcome) = s.cancel_task(queued.id).await.unwrap();
    assert_eq!(
        (outcome, t.status),
        (CancelOutcome::Cancelled, TaskStatus::Cancelled)
    );
    assert!(t.finished_at.is_some());
    assert!(matches!(
        s.cancel_task(queued.id).await,
        Err(StoreError::AlreadyFinished {
            status: TaskStatus::Cancelled,
            ..
        })
    ));
    let running = s.create_task(spec("b")).await.unwrap();
    assert!(s.start_task(running.id, "d").await.unwrap());
    let (t, outcome) = s.cancel_task(running.id).await.unwrap();
    assert_eq!(outcome, CancelOutcome::Requested);
    assert_eq!(t.status, TaskStatus::Running);
    assert!(t.cancel_requested);
    let waiting = s.create_task(spec("c")).await.unwrap();
    assert!(s.start_task(waiting.id, "d").await.unwrap());
    s.set_task_status(waiting.id, TaskStatus::WaitingForUser, Some("asked"))
        .await
        .unwrap();
    let (_, outcome) = s.cancel_task(waiting.id).await.unwrap();
    assert_eq!(
        outcome,
        CancelOutcome::Cancelled,
        "a waiting task ends at once"
    );
    assert!(matches!(
        s.cancel_task(TaskId::new()).await,
        Err(StoreError::TaskNotFound(_))
    ));
}

// A cancel (read, then write) racing a writer on the same database never fails.
both!(cancels_racing_writers_never_fail);
async fn cancels_racing_writers_never_fail(s: S) {
    let t = s.create_task(spec("a")).await.unwrap();
    assert!(s.start_task(t.id, "d").await.unwrap());
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for _ in 0..150 {
                s.append_event(
                    &t.id.to_string(),
                    TaskEvent::Resumed {
                        task_id: t.id,
                        from_step: 1,
                        cause: Default::default(),
                        by: None,
                        manual_actions: None,
                    },
                )
                .await
                .unwrap();
            }
        })
    };
    for _ in 0..150 {
        let (_, outcome) = s.cancel_task(t.id).await.expect("no busy error");
        assert_eq!(outcome, CancelOutcome::Requested);
    }
    writer.await.unwrap();
}

both!(a_task_keeps_its_first_ending);
async fn a_task_keeps_its_first_ending(s: S) {
    let t = s.create_task(spec("a")).await.unwrap();
    assert!(s.start_task(t.id, "d").await.unwrap());
    let waiting = s
        .set_task_status(t.id, TaskStatus::WaitingForUser, Some("q"))
        .await
        .unwrap();
    assert_eq!(
        (waiting.status, waiting.reason.as_deref()),
        (TaskStatus::WaitingForUser, Some("q"))
    );
    s.set_task_status(t.id, TaskStatus::Running, None)
        .await
        .unwrap();
    let done = s
        .finish_task(t.id, TaskStatus::Succeeded, Some("done"), Some("42"))
        .await
        .unwrap();
    assert_eq!(done.answer.as_deref(), Some("42"));
    let second = s
        .finish_task(t.id, TaskStatus::TimedOut, Some("late"), None)
        .await;
    assert!(matches!(
        second,
        Err(StoreError::WrongStatus {
            status: TaskStatus::Succeeded,
            ..
        })
    ));
    let t = s.get_task(t.id).await.unwrap();
    assert_eq!(
        (t.status, t.reason.as_deref(), t.answer.as_deref()),
        (TaskStatus::Succeeded, Some("done"), Some("42"))
    );
    assert!(matches!(
        s.set_task_status(t.id, TaskStatus::Running, None).await,
        Err(StoreError::WrongStatus { .. })
    ));
}

both!(a_tasks_agent_object_is_replaced_whole);
async fn a_tasks_agent_object_is_replaced_whole(s: S) {
    let t = s.create_task(spec("a")).await.unwrap();
    let agent = serde_json::json!({"kind": "replay", "actions": [
        {"action": "type", "selector": "#password", "text": "••••"}]});
    s.set_task_agent(t.id, &agent).await.unwrap();
    assert_eq!(s.get_task(t.id).await.unwrap().spec.agent, Some(agent));
}

both!(a_tasks_recording_is_kept_and_deleted_with_it);
/// A `record_video` task's segments: stored on the task, read back, and their artifacts
/// deleted with the task.
async fn a_tasks_recording_is_kept_and_deleted_with_it(s: S) {
    let mut spec = spec("rec");
    spec.record_video = true;
    let t = s.create_task(spec).await.unwrap();
    assert!(t.spec.record_video && t.recording.is_empty());
    let video = Artifact {
        sha256: "cd".repeat(32),
        kind: "screenrecord".into(),
        media_type: "video/mp4".into(),
        path: "artifacts/cd/cdcd.mp4".into(),
        bytes: 4321,
    };
    s.put_artifact(&video).await.unwrap();
    let seg = droidpilot::domain::RecordingSegment {
        sha256: video.sha256.clone(),
        bytes: 4321,
        started_at: "2026-01-02T03:04:05.123Z".parse().unwrap(),
        duration_ms: 2500,
        width: 540,
        height: 1200,
    };
    s.set_task_recording(t.id, std::slice::from_ref(&seg))
        .await
        .unwrap();
    assert_eq!(s.get_task(t.id).await.unwrap().recording, vec![seg]);
    assert!(s.start_task(t.id, "sim-1").await.unwrap());
    s.finish_task(t.id, TaskStatus::Succeeded, None, None)
        .await
        .unwrap();
    assert_eq!(s.delete_task(t.id).await.unwrap(), vec![video.clone()]);
    assert_eq!(s.artifact(&video.sha256).await.unwrap(), None);
}

both!(recover_running_interrupts_or_requeues);
async fn recover_running_interrupts_or_requeues(s: S) {
    let mut running = Vec::new();
    for _ in 0..2 {
        let t = s.create_task(spec("r")).await.unwrap();
        assert!(s.start_task(t.id, "d").await.unwrap());
        running.push(t.id);
    }
    s.set_task_status(running[1], TaskStatus::WaitingForUser, None)
        .await
        .unwrap();
    let queued = s.create_task(spec("q")).await.unwrap();
    let mut expect = running.clone();
    expect.sort();
    assert_eq!(s.recover_running(true, "restarted").await.unwrap(), expect);
    for id in &running {
        let t = s.get_task(*id).await.unwrap();
        assert_eq!(
            (t.status, t.reason.as_deref()),
            (TaskStatus::Queued, Some("restarted"))
        );
    }
    assert!(s.start_task(running[0], "d").await.unwrap());
    assert_eq!(
        s.recover_running(false, "gone").await.unwrap(),
        [running[0]]
    );
    let t = s.get_task(running[0]).await.unwrap();
    assert_eq!(t.status, TaskStatus::Interrupted);
    assert!(t.finished_at.is_some());
    assert_eq!(
        s.get_task(queued.id).await.unwrap().status,
        TaskStatus::Queued
    );
    assert!(s.recover_running(false, "again").await.unwrap().is_empty());
}

both!(artifacts_are_recorded_once_by_hash);
async fn artifacts_are_recorded_once_by_hash(s: S) {
    let a = Artifact {
        sha256: "ab".repeat(32),
        kind: "screenshot".into(),
        media_type: "image/png".into(),
        path: "artifacts/ab/abab.png".into(),
        bytes: 1234,
    };
    s.put_artifact(&a).await.unwrap();
    let other = Artifact {
        path: "elsewhere".into(),
        ..a.clone()
    };
    s.put_artifact(&other)
        .await
        .expect("the same hash again is a no-op");
    assert_eq!(s.artifact(&a.sha256).await.unwrap(), Some(a.clone()));
    assert_eq!(s.artifact("cd").await.unwrap(), None);
    let task = s.create_task(spec("t")).await.unwrap();
    let mut step = typed_step(task.id, 1, Some(tap()));
    step.screenshot = Some(a.sha256.clone());
    s.append_step(&step).await.unwrap();
    assert_eq!(s.step(task.id, 1).await.unwrap().screenshot, Some(a.sha256));
}

both!(a_question_is_answered_once);
async fn a_question_is_answered_once(s: S) {
    let task = s.create_task(spec("t")).await.unwrap();
    let iv = Intervention {
        id: "q-1".into(),
        task_id: task.id,
        kind: InterventionKind::AskUser,
        question: Some("Which?".into()),
        options: Some(vec!["a".into(), "b".into()]),
        answer: None,
        answered_by: None,
        created_at: "2026-01-02T03:04:05.123456Z".parse().unwrap(),
        answered_at: None,
        by: None,
        action: None,
        step: None,
        detail: None,
    };
    s.create_intervention(&iv).await.unwrap();
    assert_eq!(s.interventions(task.id).await.unwrap(), vec![iv]);
    let answered = s.answer_intervention("q-1", "b", "rest").await.unwrap();
    assert_eq!(
        (answered.answer.as_deref(), answered.answered_by.as_deref()),
        (Some("b"), Some("rest"))
    );
    assert!(answered.answered_at.is_some());
    assert!(matches!(
        s.answer_intervention("q-1", "a", "websocket").await,
        Err(StoreError::AlreadyAnswered(_))
    ));
    assert!(matches!(
        s.answer_intervention("nope", "a", "rest").await,
        Err(StoreError::InterventionNotFound(_))
    ));
    assert_eq!(
        s.interventions(task.id).await.unwrap()[0].answer.as_deref(),
        Some("b")
    );
}

both!(script_versions_are_kept_and_pages_hold_the_latest_of_each);
async fn script_versions_are_kept_and_pages_hold_the_latest_of_each(store: S) {
    let a = store
        .create_script(&doc("a"), ScriptSource::Uploaded)
        .await
        .unwrap();
    let b = store
        .create_script(&doc("b"), ScriptSource::Uploaded)
        .await
        .unwrap();
    let mut healed = doc("a");
    healed.steps[0]
        .alternative_selectors
        .push(":text(\"OK\")".into());
    let a2 = store
        .add_script_version(a.id, &healed, ScriptSource::Uploaded)
        .await
        .unwrap();
    assert_eq!((a.version, a2.version), (1, 2));
    assert_eq!(store.script(a.id, None).await.unwrap(), a2);
    assert_eq!(store.script(a.id, Some(1)).await.unwrap(), a);
    assert!(matches!(
        store.script(a.id, Some(9)).await,
        Err(StoreError::ScriptVersionNotFound { version: 9, .. })
    ));
    let versions = store.script_versions(a.id).await.unwrap();
    assert_eq!(
        versions.iter().map(|v| v.version).collect::<Vec<_>>(),
        [1, 2]
    );
    let p1 = store.list_scripts(None, 1).await.unwrap();
    assert_eq!(p1.scripts[0].id, b.id, "newest first");
    let p2 = store
        .list_scripts(p1.next_cursor.as_deref(), 1)
        .await
        .unwrap();
    assert_eq!((p2.scripts[0].id, p2.scripts[0].version), (a.id, 2));
    assert!(p2.next_cursor.is_none());
    assert!(matches!(
        store.list_scripts(Some("nope"), 1).await,
        Err(StoreError::InvalidCursor(_))
    ));
    store.delete_script(a.id).await.unwrap();
    assert!(matches!(
        store.script(a.id, Some(1)).await,
        Err(StoreError::ScriptNotFound(_))
    ));
    assert!(matches!(
        store.delete_script(a.id).await,
        Err(StoreError::ScriptNotFound(_))
    ));
    assert!(matches!(
        store
            .add_script_version(a.id, &healed, ScriptSource::Uploaded)
            .await,
        Err(StoreError::ScriptNotFound(_))
    ));
}

fn workspace_draft(name: &str, text: &str) -> droidpilot::domain::StoredWorkspace {
    use droidpilot::domain::{
        StoredWorkspace, WorkspaceFile, WorkspaceFlow, WorkspaceId, WorkspaceSource,
        WorkspaceSummary, WorkspaceVersion,
    };
    let files = std::collections::BTreeMap::from([("a.yaml".to_string(), text.to_string())]);
    StoredWorkspace {
        info: WorkspaceVersion {
            id: WorkspaceId::new(),
            version: 0,
            name: name.into(),
            source: WorkspaceSource::Uploaded,
            created_at: chrono::Utc::now(),
            files: vec![WorkspaceFile {
                path: "a.yaml".into(),
                bytes: text.len() as u64,
                flow: true,
            }],
            config: WorkspaceSummary {
                flows: vec![WorkspaceFlow {
                    path: "a.yaml".into(),
                    name: "a".into(),
                    tags: vec!["smoke".into()],
                }],
                tags: vec!["smoke".into()],
                globs: vec!["*".into()],
                ..Default::default()
            },
        },
        files,
    }
}

// Workspaces are versioned like scripts: versions kept with their files (text with NUL
// and non-ASCII included), the latest of each listed newest first, deleted whole.
both!(workspace_versions_are_kept_with_their_files_and_pages_hold_the_latest_of_each);
async fn workspace_versions_are_kept_with_their_files_and_pages_hold_the_latest_of_each(store: S) {
    use droidpilot::domain::{FlowRunId, WorkspaceSource};
    let a = store
        .create_workspace(workspace_draft("a", "appId: x\n---\n- back\n"))
        .await
        .unwrap();
    let b = store
        .create_workspace(workspace_draft("b", "x"))
        .await
        .unwrap();
    assert_eq!((a.version, a.name.as_str()), (1, "a"));
    assert_ne!(a.id, b.id);
    let mut healed = workspace_draft("a", "nul \u{0} and é \u{ffff}");
    let run = FlowRunId::new();
    healed.info.source = WorkspaceSource::Healed { flow_run: run };
    let a2 = store.add_workspace_version(a.id, healed).await.unwrap();
    assert_eq!((a2.id, a2.version), (a.id, 2));
    assert_eq!(a2.source, WorkspaceSource::Healed { flow_run: run });
    let latest = store.workspace(a.id, None).await.unwrap();
    assert_eq!(latest.info, a2);
    assert_eq!(latest.files["a.yaml"], "nul \u{0} and é \u{ffff}");
    let first = store.workspace(a.id, Some(1)).await.unwrap();
    assert_eq!(first.info, a);
    assert_eq!(first.files["a.yaml"], "appId: x\n---\n- back\n");
    assert!(matches!(
        store.workspace(a.id, Some(9)).await,
        Err(StoreError::WorkspaceVersionNotFound { version: 9, .. })
    ));
    assert_eq!(
        store.workspace_versions(a.id).await.unwrap(),
        [a.clone(), a2.clone()]
    );
    let p1 = store.list_workspaces(None, 1).await.unwrap();
    assert_eq!(p1.workspaces, std::slice::from_ref(&b), "newest first");
    let p2 = store
        .list_workspaces(p1.next_cursor.as_deref(), 1)
        .await
        .unwrap();
    assert_eq!(
        p2.workspaces,
        std::slice::from_ref(&a2),
        "the latest version of each"
    );
    assert!(p2.next_cursor.is_none());
    assert!(matches!(
        store.list_workspaces(Some("nope"), 1).await,
        Err(StoreError::InvalidCursor(_))
    ));
    store.delete_workspace(a.id).await.unwrap();
    for r in [
        store.workspace(a.id, Some(1)).await.map(|_| ()),
        store.workspace_versions(a.id).await.map(|_| ()),
        store.delete_workspace(a.id).await,
        store
            .add_workspace_version(a.id, workspace_draft("a", "x"))
            .await
            .map(|_| ()),
    ] {
        assert!(matches!(r, Err(StoreError::WorkspaceNotFound(_))), "{r:?}");
    }
    assert_eq!(store.workspace(b.id, None).await.unwrap().info, b);
}

// New versions of one workspace at once get distinct numbers.
both!(concurrent_workspace_versions_get_distinct_numbers);
async fn concurrent_workspace_versions_get_distinct_numbers(store: S) {
    let a = store
        .create_workspace(workspace_draft("a", "x"))
        .await
        .unwrap();
    let mut handles = Vec::new();
    for _ in 0..4 {
        let s = store.clone();
        handles.push(tokio::spawn(async move {
            s.add_workspace_version(a.id, workspace_draft("a", "y"))
                .await
                .unwrap()
                .version
        }));
    }
    let mut got = Vec::new();
    for h in handles {
        got.push(h.await.unwrap());
    }
    got.sort();
    assert_eq!(got, [2, 3, 4, 5]);
}

// New versions of one script at once (two instances healing it) get distinct numbers.
both!(concurrent_script_versions_get_distinct_numbers);
async fn concurrent_script_versions_get_distinct_numbers(store: S) {
    let a = store
        .create_script(&doc("a"), ScriptSource::Uploaded)
        .await
        .unwrap();
    let mut handles = Vec::new();
    for _ in 0..4 {
        let s = store.clone();
        handles.push(tokio::spawn(async move {
            s.add_script_version(a.id, &doc("a"), ScriptSource::Uploaded)
                .await
                .unwrap()
                .version
        }));
    }
    let mut got = Vec::new();
    for h in handles {
        got.push(h.await.unwrap());
    }
    got.sort();
    assert_eq!(got, [2, 3, 4, 5]);
}

both!(a_persons_action_is_kept_with_who_what_and_when);
async fn a_persons_action_is_kept_with_who_what_and_when(s: S) {
    let task = s.create_task(spec("t")).await.unwrap();
    let iv = Intervention {
        id: "m-1".into(),
        task_id: task.id,
        kind: InterventionKind::ManualAction,
        question: None,
        options: None,
        answer: None,
        answered_by: None,
        created_at: "2026-01-02T03:04:05.123456Z".parse().unwrap(),
        answered_at: None,
        by: Some("alice".into()),
        action: Some(serde_json::json!({"action": "tap", "pixel": [540, 1200]})),
        step: Some(4),
        detail: Some(serde_json::json!({"status": "ok"})),
    };
    s.create_intervention(&iv).await.unwrap();
    assert_eq!(s.interventions(task.id).await.unwrap(), vec![iv]);
}

// ---------------------------------------------------------------------------------------
// One transaction per step (`Store::commit_step`)

fn shot(sha: &str) -> Artifact {
    Artifact {
        sha256: sha.repeat(32),
        kind: "screenshot".into(),
        media_type: "image/png".into(),
        path: format!("artifacts/{sha}/{sha}.png"),
        bytes: 10,
    }
}

fn ev(kind: &str, i: i64) -> TaskEvent {
    TaskEvent::from_parts(kind, serde_json::json!({"i": i}))
}

fn kinds(events: &[droidpilot::store::StoredEvent]) -> Vec<(i64, String)> {
    events
        .iter()
        .map(|e| (e.seq, e.kind().to_string()))
        .collect()
}

both!(a_step_commits_with_its_artifacts_and_events_once);
async fn a_step_commits_with_its_artifacts_and_events_once(s: S) {
    let task = s.create_task(spec("t")).await.unwrap();
    let stream = task.id.to_string();
    s.append_event(&stream, ev("task.started", 0))
        .await
        .unwrap();
    let a = shot("cd");
    let mut step = typed_step(task.id, 1, Some(tap()));
    step.screenshot = Some(a.sha256.clone());
    let events = [
        ev("step.observed", 1),
        ev("step.decided", 1),
        ev("step.executed", 1),
    ];
    let c = StepCommit {
        stream: &stream,
        step: Some(&step),
        artifacts: std::slice::from_ref(&a),
        events: &events,
    };
    let seqs = s.commit_step(&c).await.unwrap().expect("committed");
    assert_eq!(seqs.first, 2, "after the event already in the stream");
    let stored = s.events_since(&stream, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&stored),
        [
            (1, "task.started"),
            (2, "step.observed"),
            (3, "step.decided"),
            (4, "step.executed")
        ]
        .map(|(n, k)| (n, k.to_string())),
        "in order, gapless"
    );
    assert_eq!(s.artifact(&a.sha256).await.unwrap(), Some(a.clone()));
    assert_eq!(s.step(task.id, 1).await.unwrap(), step);

    // A retry of the same commit (its reply lost) writes nothing and says so.
    assert_eq!(s.commit_step(&c).await.unwrap(), None);
    assert_eq!(s.events_since(&stream, 0, 100).await.unwrap().len(), 4);
    let t = s.get_task(task.id).await.unwrap();
    assert_eq!(
        (t.steps, t.tokens_in, t.model_calls),
        (1, 1, 1),
        "counted once"
    );

    // Without a step: events (and rows) alone, continuing the stream.
    let more = [ev("model.retry", 2)];
    let c = StepCommit {
        stream: &stream,
        step: None,
        artifacts: std::slice::from_ref(&a),
        events: &more,
    };
    assert_eq!(s.commit_step(&c).await.unwrap().map(|q| q.first), Some(5));
    assert_eq!(
        s.events_since(&stream, 4, 10).await.unwrap()[0].kind(),
        "model.retry"
    );
}

/// PostgreSQL only (SQLite has no other instances): a step's commit announces each of its
/// events to the other instances, whose relay re-reads them from these pointers: once,
/// in seq order, from the committing process. A retried commit that writes nothing
/// announces nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_commit_sends_the_other_instances_a_pointer_per_event() {
    use droidpilot::store::notify::{EventPointer, Notice};
    let Some(db) = crate::common::pg::FreshDb::create().await else {
        return;
    };
    let a = droidpilot::store::PostgresStore::connect(&db.url, 4)
        .await
        .unwrap();
    let b = droidpilot::store::PostgresStore::connect(&db.url, 4)
        .await
        .unwrap();
    let mut heard = b.notifier().unwrap().listen().await.unwrap();
    let task = a.create_task(spec("t")).await.unwrap();
    let stream = task.id.to_string();
    a.append_event(&stream, ev("task.started", 0))
        .await
        .unwrap();
    let step = typed_step(task.id, 1, Some(tap()));
    let events = [
        ev("step.observed", 1),
        ev("step.decided", 1),
        ev("step.executed", 1),
    ];
    let c = StepCommit {
        stream: &stream,
        step: Some(&step),
        artifacts: &[],
        events: &events,
    };
    a.commit_step(&c).await.unwrap().unwrap();
    assert_eq!(a.commit_step(&c).await.unwrap(), None, "already committed");
    a.append_event(&stream, ev("task.finished", 0))
        .await
        .unwrap();
    let mut pointers = Vec::new();
    while pointers.len() < 5 {
        // A bound only so a missing pointer fails instead of hanging the suite.
        let next = tokio::time::timeout(std::time::Duration::from_secs(30), heard.next());
        match next.await.expect("a pointer per event").unwrap() {
            Some(Notice::Event(p)) => pointers.push(p),
            Some(Notice::Control(_)) => {}
            None => panic!("the listening connection was lost"),
        }
    }
    let origin = a.notifier().unwrap().origin().to_string();
    let expected: Vec<EventPointer> = (1..=5)
        .map(|seq| EventPointer {
            stream: stream.clone(),
            seq,
            origin: origin.clone(),
        })
        .collect();
    assert_eq!(
        pointers, expected,
        "one per event, in seq order, none twice"
    );
    a.close().await;
    b.close().await;
    db.drop_now().await;
}

both!(a_failed_step_commit_leaves_nothing_behind);
async fn a_failed_step_commit_leaves_nothing_behind(s: S) {
    // A step of a task that does not exist breaks the steps table's foreign key.
    let ghost = TaskId::new();
    let stream = ghost.to_string();
    let step = typed_step(ghost, 1, Some(tap()));
    let a = shot("ef");
    let events = [ev("step.executed", 1)];
    let c = StepCommit {
        stream: &stream,
        step: Some(&step),
        artifacts: std::slice::from_ref(&a),
        events: &events,
    };
    assert!(s.commit_step(&c).await.is_err());
    assert_eq!(
        s.artifact(&a.sha256).await.unwrap(),
        None,
        "no artifact row"
    );
    assert!(
        s.events_since(&stream, 0, 10).await.unwrap().is_empty(),
        "no event"
    );
    // The stream's seqs start at 1 still.
    let first = s.append_event(&stream, ev("x", 0)).await.unwrap();
    assert_eq!(first.seq, 1);
}

both!(step_commits_and_single_events_share_one_gapless_sequence);
async fn step_commits_and_single_events_share_one_gapless_sequence(s: S) {
    let task = s.create_task(spec("t")).await.unwrap();
    let stream = task.id.to_string();
    let mut handles = Vec::new();
    for n in 1..=20u32 {
        let (s, stream) = (s.clone(), stream.clone());
        handles.push(tokio::spawn(async move {
            if n % 2 == 0 {
                let step = typed_step(task.id, n, Some(tap()));
                let events = [ev("step.observed", n as i64), ev("step.executed", n as i64)];
                let c = StepCommit {
                    stream: &stream,
                    step: Some(&step),
                    artifacts: &[],
                    events: &events,
                };
                s.commit_step(&c).await.unwrap().unwrap();
            } else {
                s.append_event(&stream, ev("other", n as i64))
                    .await
                    .unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let stored = s.events_since(&stream, 0, 100).await.unwrap();
    let seqs: Vec<i64> = stored.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=30).collect::<Vec<_>>(), "gapless, no repeat");
    // A step's events sit next to each other, in order.
    for pair in stored.windows(2) {
        if pair[0].kind() == "step.observed" {
            assert_eq!(pair[1].kind(), "step.executed");
            assert_eq!(pair[0].event.payload(), pair[1].event.payload());
        }
    }
    assert_eq!(s.get_task(task.id).await.unwrap().steps, 10);
}

/// A string no text column of PostgreSQL holds as it is: NUL, the escape its store uses
/// for it, a JSON-escaped NUL spelled out, and text around them.
const ODD: &str = "a\u{0}b \u{FFFF}0 \\u0000 \u{0}\u{FFFF}\u{FFFF} é😀";

both!(any_json_string_round_trips_nul_included);
async fn any_json_string_round_trips_nul_included(s: S) {
    let mut sp = spec(ODD);
    sp.metadata = Some(serde_json::json!({ODD: [ODD, {"k": ODD}]}));
    sp.agent = Some(serde_json::json!({"kind": "replay", "note": ODD}));
    sp.external_id = Some(ODD.into());
    sp.session_id = Some(ODD.into());
    let t = s.create_task(sp.clone()).await.unwrap();
    assert_eq!(t.spec, sp);
    assert_eq!(s.get_task(t.id).await.unwrap().spec, sp);
    assert!(s.start_task(t.id, "sim-1").await.unwrap());

    // A step through each write path: alone, and committed with its events.
    let typed = ActionParser::new()
        .parse(&serde_json::json!({"action": "type", "text": ODD}))
        .unwrap();
    let mut one = typed_step(t.id, 1, Some(typed.clone()));
    one.thinking = Some(ODD.into());
    one.raw = Some(ODD.into());
    one.by = Some(ODD.into());
    one.outcome.error = Some(ODD.into());
    one.outcome.detail = Some(serde_json::json!({ODD: ODD}));
    s.append_step(&one).await.unwrap();
    let mut two = one.clone();
    two.n = 2;
    two.rejected = Some(serde_json::json!({"action": ODD}));
    two.screen.as_mut().unwrap().summary = ODD.into();
    let stream = t.id.to_string();
    let events = vec![TaskEvent::from_parts(
        "x",
        serde_json::json!({"raw": ODD, ODD: 1}),
    )];
    s.commit_step(&StepCommit {
        stream: &stream,
        step: Some(&two),
        artifacts: &[],
        events: &events,
    })
    .await
    .unwrap()
    .expect("committed");
    s.append_event(&stream, events[0].clone()).await.unwrap();
    assert_eq!(s.steps(t.id).await.unwrap(), vec![one, two]);
    let stored = s.events_since(&stream, 0, 10).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|e| e.event == events[0]), "{stored:?}");

    let iv = Intervention {
        id: "q-nul".into(),
        task_id: t.id,
        kind: InterventionKind::AskUser,
        question: Some(ODD.into()),
        options: Some(vec![ODD.into()]),
        answer: None,
        answered_by: None,
        created_at: "2026-01-02T03:04:05.123456Z".parse().unwrap(),
        answered_at: None,
        by: Some(ODD.into()),
        action: Some(serde_json::json!({"text": ODD})),
        step: None,
        detail: Some(serde_json::json!({ODD: ODD})),
    };
    s.create_intervention(&iv).await.unwrap();
    let answered = s.answer_intervention("q-nul", ODD, ODD).await.unwrap();
    assert_eq!(
        (answered.answer.as_deref(), answered.answered_by.as_deref()),
        (Some(ODD), Some(ODD))
    );
    assert_eq!(answered.question, iv.question);
    assert_eq!((answered.options, answered.detail), (iv.options, iv.detail));

    let ended = s
        .finish_task(t.id, TaskStatus::Failed, Some(ODD), Some(ODD))
        .await
        .unwrap();
    assert_eq!(
        (ended.reason.as_deref(), ended.answer.as_deref()),
        (Some(ODD), Some(ODD))
    );
    let back = s.get_task(t.id).await.unwrap();
    assert_eq!(back, ended);

    let mut script = doc(ODD);
    script.goal = ODD.into();
    let rec = s
        .create_script(&script, ScriptSource::Uploaded)
        .await
        .unwrap();
    assert_eq!(s.script(rec.id, None).await.unwrap().script, script);
}

both!(an_ended_task_is_deleted_whole_and_shared_screenshots_stay);
async fn an_ended_task_is_deleted_whole_and_shared_screenshots_stay(s: S) {
    let (shared, own, live) = (shot("aa11"), shot("bb22"), shot("cc33"));
    for a in [&shared, &own, &live] {
        s.put_artifact(a).await.unwrap();
    }
    let with_shot = |task: TaskId, n: u32, a: &Artifact| {
        let mut st = typed_step(task, n, Some(tap()));
        st.screenshot = Some(a.sha256.clone());
        st
    };
    let one = s.create_task(spec("one")).await.unwrap();
    let two = s.create_task(spec("two")).await.unwrap();
    let three = s.create_task(spec("three")).await.unwrap();
    for st in [
        with_shot(one.id, 1, &shared),
        with_shot(one.id, 2, &own),
        with_shot(two.id, 1, &shared),
        with_shot(three.id, 1, &live),
    ] {
        s.append_step(&st).await.unwrap();
    }
    s.append_event(&one.id.to_string(), ev("x", 1))
        .await
        .unwrap();
    let iv = Intervention {
        id: "q-del".into(),
        task_id: one.id,
        kind: InterventionKind::AskUser,
        question: Some("?".into()),
        options: None,
        answer: None,
        answered_by: None,
        created_at: "2026-01-02T03:04:05.123456Z".parse().unwrap(),
        answered_at: None,
        by: None,
        action: None,
        step: None,
        detail: None,
    };
    s.create_intervention(&iv).await.unwrap();

    // Not ended: refused, queued or running alike.
    assert!(matches!(
        s.delete_task(one.id).await,
        Err(StoreError::NotEnded { .. })
    ));
    assert!(s.start_task(one.id, "sim-1").await.unwrap());
    assert!(matches!(
        s.delete_task(one.id).await,
        Err(StoreError::NotEnded { .. })
    ));
    s.finish_task(one.id, TaskStatus::Succeeded, None, None)
        .await
        .unwrap();
    let gone = s.delete_task(one.id).await.unwrap();
    assert_eq!(
        gone,
        vec![own.clone()],
        "only the picture no other step shows"
    );
    assert!(matches!(
        s.get_task(one.id).await,
        Err(StoreError::TaskNotFound(_))
    ));
    assert!(matches!(
        s.delete_task(one.id).await,
        Err(StoreError::TaskNotFound(_))
    ));
    assert!(
        s.events_since(&one.id.to_string(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.interventions(one.id).await.unwrap().is_empty());
    assert_eq!(s.artifact(&own.sha256).await.unwrap(), None);
    assert_eq!(
        s.artifact(&shared.sha256).await.unwrap(),
        Some(shared.clone())
    );
    assert_eq!(
        s.steps(two.id).await.unwrap().len(),
        1,
        "the other task is whole"
    );

    // Retention's queries: by the time a task ended, and screenshots only once no live
    // or more recent task shows them.
    s.finish_task(two.id, TaskStatus::Failed, None, None)
        .await
        .unwrap();
    let now = chrono::Utc::now();
    let day = chrono::Duration::days(1);
    assert_eq!(s.ended_before(now - day, 10).await.unwrap(), vec![]);
    assert_eq!(s.ended_before(now + day, 10).await.unwrap(), vec![two.id]);
    assert_eq!(
        s.delete_artifacts_before(now - day, 10).await.unwrap(),
        vec![]
    );
    let expired = s.delete_artifacts_before(now + day, 10).await.unwrap();
    assert_eq!(
        expired,
        vec![shared.clone()],
        "the live task's picture stays"
    );
    assert_eq!(s.steps(two.id).await.unwrap()[0].screenshot, None);
    assert_eq!(s.artifact(&live.sha256).await.unwrap(), Some(live));
}

both!(app_descriptions_are_kept_per_package_and_version);
async fn app_descriptions_are_kept_per_package_and_version(s: S) {
    let pkg = "com.google.android.deskclock";
    assert_eq!(s.app_description(pkg, "1").await.unwrap(), None);
    s.put_app_description(pkg, "1", "Alarms, timers and a stopwatch.", "openai:gpt-4o")
        .await
        .unwrap();
    assert_eq!(
        s.app_description(pkg, "1").await.unwrap().as_deref(),
        Some("Alarms, timers and a stopwatch.")
    );
    assert_eq!(
        s.app_description(pkg, "2").await.unwrap(),
        None,
        "another version is described again"
    );
    s.put_app_description(pkg, "1", "Alarms and timers.", "openai:gpt-4o")
        .await
        .unwrap();
    assert_eq!(
        s.app_description(pkg, "1").await.unwrap().as_deref(),
        Some("Alarms and timers."),
        "written again: replaced"
    );
    s.put_app_description("com.example.nul", "", "a\u{0}b", "m")
        .await
        .unwrap();
    assert_eq!(
        s.app_description("com.example.nul", "")
            .await
            .unwrap()
            .as_deref(),
        Some("a\u{0}b")
    );
}

both!(flow_runs_are_saved_replaced_listed_and_found_running);
/// A flow run is one row rewritten as its flows end: saving again replaces it, the list
/// is newest first by pages, and start-up finds the ones left `running`.
async fn flow_runs_are_saved_replaced_listed_and_found_running(s: Arc<dyn Store>) {
    use droidpilot::domain::{
        FlowFailure, FlowResult, FlowRun, FlowRunId, FlowRunStatus, FlowStatus,
    };
    let run = |status| FlowRun {
        id: FlowRunId::new(),
        status,
        reason: None,
        shards: 2,
        devices: vec!["p1".into()],
        retries: 1,
        include_tags: vec!["smoke".into()],
        exclude_tags: vec![],
        env: vec!["USER".into()],
        continue_on_failure: true,
        workspace: Some(droidpilot::domain::WorkspaceRef {
            id: droidpilot::domain::WorkspaceId::new(),
            version: 3,
        }),
        flows: vec![FlowResult::pending(
            "a.yaml",
            "a",
            vec!["smoke".into()],
            true,
        )],
        created_at: chrono::Utc::now(),
        finished_at: None,
        duration_ms: None,
    };
    let mut first = run(FlowRunStatus::Running);
    let second = run(FlowRunStatus::Running);
    s.save_flow_run(&first).await.unwrap();
    s.save_flow_run(&second).await.unwrap();
    first.flows[0].status = FlowStatus::Failed;
    first.flows[0].failure = Some(FlowFailure {
        message: "a.yaml line 3 (tapOn text \"Save\"): no element matches\u{0}".into(),
        step: Some(2),
        screenshot: None,
    });
    first.status = FlowRunStatus::Failed;
    s.save_flow_run(&first).await.unwrap();
    assert_eq!(s.flow_run(first.id).await.unwrap(), first, "replaced whole");
    let running = s.running_flow_runs().await.unwrap();
    assert_eq!(running, vec![second.clone()]);
    let p1 = s.list_flow_runs(None, 1).await.unwrap();
    assert_eq!(p1.runs, vec![second.clone()], "newest first");
    let p2 = s
        .list_flow_runs(p1.next_cursor.as_deref(), 1)
        .await
        .unwrap();
    assert_eq!(p2.runs, vec![first.clone()]);
    assert_eq!(p2.next_cursor, None);
    let missing = FlowRunId::new();
    assert!(matches!(
        s.flow_run(missing).await,
        Err(StoreError::FlowRunNotFound(id)) if id == missing
    ));
}
