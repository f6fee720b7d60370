//! `droidpilot migrate-store` as a user runs it: a SQLite database with every kind of row
//! is copied into a fresh PostgreSQL database, which then reads back the same through the
//! `Store` trait and goes on numbering events; a second copy into it is refused.

use std::process::Command;

use droidpilot::domain::{
    Intervention, InterventionKind, NewTask, TaskEvent, TaskSpec, TaskStatus,
};
use droidpilot::script::{Script, ScriptSource};
use droidpilot::store::{Artifact, PostgresStore, SqliteStore, Store};

use crate::common::pg::FreshDb;

const BIN: &str = env!("CARGO_BIN_EXE_droidpilot");

fn migrate(from: &str, to: &str) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["migrate-store", "--from", from, "--to", to])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A SQLite store holding two tasks (one finished with steps, a screenshot, a question and
/// events), a pool event and a script with two versions.
async fn filled(s: &SqliteStore) -> droidpilot::domain::TaskId {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("turn bluetooth on".into()),
        metadata: Some(serde_json::json!({"team": "qa"})),
        ..Default::default()
    })
    .unwrap();
    let t = s.create_task(spec.clone()).await.unwrap();
    s.create_task(spec).await.unwrap();
    assert!(s.start_task(t.id, "sim-1").await.unwrap());
    let sha = "ab".repeat(32);
    s.put_artifact(&Artifact {
        sha256: sha.clone(),
        kind: "screenshot".into(),
        media_type: "image/png".into(),
        path: "artifacts/ab.png".into(),
        bytes: 10,
    })
    .await
    .unwrap();
    for n in 1..=3 {
        let mut step = droidpilot::domain::Step {
            task_id: t.id,
            n,
            started_at: chrono::Utc::now(),
            thinking: Some(format!("step {n}")),
            action: None,
            raw: None,
            rejected: None,
            outcome: serde_json::from_value(serde_json::json!({"status": "ok"})).unwrap(),
            screen: None,
            screenshot: None,
            timings: Default::default(),
            tokens_in: 10,
            tokens_out: 5,
            tokens_cached: 4,
            cost_usd: 0.5,
            model_calls: 1,
            replay: None,
            calls: Vec::new(),
            annotations: Vec::new(),
            by: (n == 3).then(|| "alice".into()),
        };
        if n == 2 {
            step.screenshot = Some(sha.clone());
        }
        s.append_step(&step).await.unwrap();
        s.append_event(
            &t.id.to_string(),
            TaskEvent::from_parts("step.executed", serde_json::json!({"step": n})),
        )
        .await
        .unwrap();
    }
    s.create_intervention(&Intervention {
        id: "q1".into(),
        task_id: t.id,
        kind: InterventionKind::AskUser,
        question: Some("Sure?".into()),
        options: Some(vec!["yes".into()]),
        answer: None,
        answered_by: None,
        created_at: chrono::Utc::now(),
        answered_at: None,
        by: None,
        action: None,
        step: None,
        detail: None,
    })
    .await
    .unwrap();
    s.create_intervention(&Intervention {
        id: "m1".into(),
        task_id: t.id,
        kind: InterventionKind::ManualAction,
        question: None,
        options: None,
        answer: None,
        answered_by: None,
        created_at: chrono::Utc::now(),
        answered_at: None,
        by: Some("alice".into()),
        action: Some(serde_json::json!({"action": "back"})),
        step: Some(3),
        detail: None,
    })
    .await
    .unwrap();
    s.answer_intervention("q1", "yes", "rest").await.unwrap();
    s.finish_task(t.id, TaskStatus::Succeeded, Some("done"), Some("on"))
        .await
        .unwrap();
    s.append_event(
        "devices",
        TaskEvent::from_parts("device.added", serde_json::json!({"id": "sim-1"})),
    )
    .await
    .unwrap();
    let doc = Script::from_json(&serde_json::json!({"name": "bt", "goal": "g",
        "steps": [{"action": "tap", "selector": "#ok"}]}))
    .unwrap();
    let sc = s.create_script(&doc, ScriptSource::Uploaded).await.unwrap();
    s.add_script_version(sc.id, &doc, ScriptSource::Uploaded)
        .await
        .unwrap();
    let files =
        std::collections::BTreeMap::from([("a.yaml".to_string(), "appId: a\n".to_string())]);
    s.create_workspace(droidpilot::domain::StoredWorkspace {
        info: droidpilot::domain::WorkspaceVersion {
            id: droidpilot::domain::WorkspaceId::new(),
            version: 1,
            name: "ws".into(),
            source: droidpilot::domain::WorkspaceSource::Uploaded,
            created_at: chrono::Utc::now(),
            files: vec![],
            config: Default::default(),
        },
        files,
    })
    .await
    .unwrap();
    t.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_database_moves_to_postgres_whole_and_verified() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("droidpilot.db");
    let src = SqliteStore::open(&path).await.unwrap();
    let id = filled(&src).await;
    let from = format!("sqlite://{}", path.display());

    let (ok, out) = migrate(&from, &db.url);
    assert!(ok, "{out}");
    for line in [
        "tasks",
        "steps",
        "events",
        "interventions",
        "scripts",
        "artifacts",
    ] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{line}: {out}");
    }
    let row = |t: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(t))
            .unwrap()
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("tasks"), "2 2");
    assert_eq!(row("steps"), "3 3");
    assert_eq!(row("events"), "4 4");
    assert_eq!(row("scripts"), "2 2");
    assert_eq!(row("workspaces"), "1 1");
    assert!(
        !out.contains(db.url.rsplit_once('@').unwrap().0),
        "no password: {out}"
    );

    let dst = PostgresStore::connect(&db.url, 2).await.unwrap();
    assert_eq!(
        dst.get_task(id).await.unwrap(),
        src.get_task(id).await.unwrap()
    );
    assert_eq!(dst.steps(id).await.unwrap(), src.steps(id).await.unwrap());
    assert_eq!(
        dst.interventions(id).await.unwrap(),
        src.interventions(id).await.unwrap()
    );
    for stream in [id.to_string(), "devices".into()] {
        assert_eq!(
            dst.events_since(&stream, 0, 100).await.unwrap(),
            src.events_since(&stream, 0, 100).await.unwrap()
        );
    }
    let ws = src.list_workspaces(None, 10).await.unwrap().workspaces[0].id;
    assert_eq!(
        dst.workspace(ws, None).await.unwrap(),
        src.workspace(ws, None).await.unwrap()
    );
    let page = src.list_scripts(None, 10).await.unwrap();
    let sid = page.scripts[0].id;
    assert_eq!(
        dst.script_versions(sid).await.unwrap(),
        src.script_versions(sid).await.unwrap()
    );
    assert_eq!(
        dst.artifact(&"ab".repeat(32)).await.unwrap(),
        src.artifact(&"ab".repeat(32)).await.unwrap()
    );
    let next = dst
        .append_event(
            &id.to_string(),
            TaskEvent::from_parts("x", serde_json::json!({})),
        )
        .await
        .unwrap();
    assert_eq!(next.seq, 4, "event numbering goes on after the copied ones");
    dst.close().await;

    let (ok, out) = migrate(&from, &db.url);
    assert!(!ok, "a second copy into a used database is refused");
    assert!(
        out.contains("not empty") && out.contains("createdb"),
        "{out}"
    );
    src.close().await;
    db.drop_now().await;
}

#[tokio::test]
async fn wrong_kinds_of_source_and_target_are_refused() {
    let (ok, out) = migrate("postgres://a@b/c", "postgres://a@b/d");
    assert!(
        !ok && out.contains("--from must be a SQLite database"),
        "{out}"
    );
    let (ok, out) = migrate("sqlite:///nonexistent/droidpilot.db", "postgres://a@b/d");
    assert!(!ok && out.contains("no database at"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    SqliteStore::open(&path).await.unwrap().close().await;
    let (ok, out) = migrate(&format!("sqlite://{}", path.display()), "sqlite://x");
    assert!(
        !ok && out.contains("--to must be a PostgreSQL database"),
        "{out}"
    );
}
