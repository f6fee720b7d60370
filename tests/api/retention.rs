//! Deleting tasks: `DELETE /v1/tasks/{id}` takes an ended task with its steps, events and
//! screenshot files, and refuses one that has not ended (409); `[storage] retain_days`
//! has the server delete old ended tasks by itself, in the background.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{error_of, spawn_app_with};
use crate::run::{add_phone, submit, wait_done, wait_status};

async fn delete(app: &crate::common::TestApp, id: &str) -> reqwest::Response {
    app.client
        .delete(app.url(&format!("/v1/tasks/{id}")))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_ended_task_is_deleted_with_its_files_and_a_running_one_is_refused() {
    let app = spawn_app_with(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let ask = json!({"kind": "replay", "actions": [{"action": "home"}, {"action": "ask_user", "question": "Which?"}]});
    let id = submit(&app, json!({"instruction": "ask", "agent": ask})).await;
    wait_status(&app, &id, "waiting_for_user").await;

    let (status, code, _, hint) = error_of(delete(&app, &id).await).await;
    assert_eq!((status, code.as_str()), (409, "task_not_ended"));
    assert!(hint.contains("/cancel"), "{hint}");

    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let files: Vec<std::path::PathBuf> = steps
        .iter()
        .filter_map(|s| s["screenshot"].as_str())
        .map(|sha| {
            app.data_dir
                .join(format!("artifacts/{}/{sha}.png", &sha[..2]))
        })
        .collect();
    assert!(
        !files.is_empty() && files.iter().all(|f| f.exists()),
        "{files:?}"
    );

    app.post_json(&format!("/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    wait_done(&app, &id).await;
    assert_eq!(delete(&app, &id).await.status(), 204);
    assert_eq!(app.get(&format!("/v1/tasks/{id}")).await.status(), 404);
    assert_eq!(
        app.get(&format!("/v1/tasks/{id}/events")).await.status(),
        404
    );
    assert!(
        files.iter().all(|f| !f.exists()),
        "the screenshots' files are gone"
    );
    assert_eq!(delete(&app, &id).await.status(), 404);
    app.stop().await;
}

#[tokio::test]
async fn the_server_deletes_tasks_older_than_retain_days_by_itself() {
    let app = spawn_app_with(&[
        ("DROIDPILOT_STORAGE__RETAIN_DAYS", "7"),
        ("DROIDPILOT_STORAGE__RETENTION_INTERVAL_SECS", "1"),
    ])
    .await;
    add_phone(&app, "sim-1", None).await;
    let replay = json!({"kind": "replay", "actions": [{"action": "home"}]});
    let old = submit(&app, json!({"instruction": "old", "agent": replay})).await;
    let recent = submit(&app, json!({"instruction": "recent", "agent": replay})).await;
    wait_done(&app, &old).await;
    wait_done(&app, &recent).await;
    // The old task ended eight days ago, as far as the database knows.
    {
        use sqlx::Connection;
        let file = app.data_dir.join("droidpilot.db");
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        let then = (chrono::Utc::now() - chrono::Duration::days(8))
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        sqlx::query("UPDATE tasks SET finished_at = ? WHERE id = ?")
            .bind(then)
            .bind(&old)
            .execute(&mut c)
            .await
            .unwrap();
    }
    let mut gone = false;
    for _ in 0..100 {
        if app.get(&format!("/v1/tasks/{old}")).await.status() == 404 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the old task was deleted in the background");
    assert_eq!(app.get(&format!("/v1/tasks/{recent}")).await.status(), 200);
    app.stop().await;
}
