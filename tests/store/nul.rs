//! Through the server, on both backends: a NUL in a request and in what a task records is
//! stored and read back as sent (PostgreSQL's `text` cannot hold it as it is), and a write
//! the database refuses ends the task `failed`, with a reason that does not quote the
//! database, and frees its phone (instead of a task left `running` on a released phone).

use serde_json::{Value, json};

use super::e2e::{app_on, wait_done};
use crate::common::TestApp;
use crate::common::pg::FreshDb;
use droidpilot::device::sim::tasks::task as sim_task;

const TASK: &str = "settings.bluetooth_on";
const NUL: &str = "left\u{0}right \u{FFFF}";

/// The sim task's reference, then a finish whose answer holds a NUL, on sim-1.
async fn submit(app: &TestApp) -> String {
    let mut actions: Vec<Value> = sim_task(TASK)
        .unwrap()
        .reference()
        .iter()
        .map(|a| serde_json::to_value(a).unwrap())
        .collect();
    actions.push(json!({"action": "finish", "success": true, "answer": NUL}));
    let body = json!({
        "instruction": format!("Turn on Bluetooth {NUL}"), "device_id": "sim-1",
        "metadata": {NUL: NUL},
        "agent": {"kind": "replay", "actions": actions},
    });
    let r = app.post_json("/v1/tasks", &body).await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, 201, "{text}");
    serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .into()
}

async fn nul_round_trips_and_a_refused_write_ends_the_task(
    app: TestApp,
    refuse_steps: impl AsyncFnOnce(),
) {
    let id = submit(&app).await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["answer"], NUL);
    assert_eq!(done["instruction"], format!("Turn on Bluetooth {NUL}"));
    assert_eq!(done["metadata"], json!({NUL: NUL}));
    let steps = app.get(&format!("/v1/tasks/{id}/steps")).await;
    assert_eq!(steps.status(), 200);
    let steps: Vec<Value> = steps.json().await.unwrap();
    assert_eq!(steps.last().unwrap()["action"]["answer"], NUL);

    refuse_steps().await;
    let id = submit(&app).await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("could not be saved") && !reason.contains("no steps today"),
        "a clear reason, not the database's words: {reason}"
    );
    let phone: Value = app.get("/v1/devices/sim-1").await.json().await.unwrap();
    assert_eq!(
        phone["lease_owner"],
        Value::Null,
        "the phone is free: {phone}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite() {
    let app = app_on("", TASK, &[]).await;
    let file = app.data_dir.join("droidpilot.db");
    nul_round_trips_and_a_refused_write_ends_the_task(app, async || {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        sqlx::query(
            "CREATE TRIGGER refuse BEFORE INSERT ON steps BEGIN SELECT RAISE(ABORT, 'no steps today'); END",
        )
        .execute(&mut c)
        .await
        .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let app = app_on(&db.url, TASK, &[]).await;
    let url = db.url.clone();
    nul_round_trips_and_a_refused_write_ends_the_task(app, async || {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::raw_sql(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'no steps today'; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON steps FOR EACH ROW EXECUTE FUNCTION refuse();",
        )
        .execute(&mut c)
        .await
        .unwrap();
    })
    .await;
    db.drop_now().await;
}
