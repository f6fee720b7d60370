//! The cluster half of the PostgreSQL store (`ClusterStore`), with two stores (two
//! connection pools, as two instances have) on one fresh database: racing claims start
//! each task once, start-up recovery touches only its own instance's tasks, a dead
//! instance is reaped by exactly one of two racing reapers, and a live instance's name
//! is not taken. SQLite has no cluster (`Store::cluster()` is None), checked too.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use droidpilot::domain::{NewTask, TaskId, TaskSpec, TaskStatus};
use droidpilot::store::cluster::{FarmDevice, InstanceRow, JoinOutcome};
use droidpilot::store::{PostgresStore, Store};

use crate::common::pg::FreshDb;

const DEAD_AFTER: Duration = Duration::from_secs(10);

fn spec(i: &str) -> TaskSpec {
    TaskSpec::parse(NewTask {
        instruction: Some(i.into()),
        ..Default::default()
    })
    .unwrap()
}

fn row(name: &str) -> InstanceRow {
    InstanceRow {
        name: name.into(),
        boot: uuid::Uuid::new_v4().to_string(),
        advertise_url: None,
    }
}

/// Two instances' stores on one fresh database.
async fn two(db: &FreshDb) -> (Arc<PostgresStore>, Arc<PostgresStore>) {
    let a = PostgresStore::connect(&db.url, 4).await.unwrap();
    let b = PostgresStore::connect(&db.url, 4).await.unwrap();
    (Arc::new(a), Arc::new(b))
}

/// Makes `name`'s heartbeat look a minute old (SIGKILLed a minute ago).
async fn age(s: &PostgresStore, name: &str) {
    sqlx::query(
        "UPDATE instances SET heartbeat_at = now() - interval '60 seconds' WHERE name = $1",
    )
    .bind(name)
    .execute(s.pool())
    .await
    .unwrap();
}

async fn instance_of(s: &PostgresStore, id: TaskId) -> Option<String> {
    sqlx::query_scalar("SELECT instance FROM tasks WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(s.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_claimers_racing_over_many_tasks_start_each_once() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (a, b) = two(&db).await;
    let mut all = HashSet::new();
    for i in 0..200 {
        all.insert(a.create_task(spec(&format!("t{i}"))).await.unwrap().id);
    }
    // Both start together and walk the queue in the same order, so they contend.
    let start = Arc::new(tokio::sync::Barrier::new(2));
    let claimer = |s: Arc<PostgresStore>, me: &'static str| {
        let start = start.clone();
        async move {
            start.wait().await;
            let mut won = Vec::new();
            loop {
                let queued = s.queued_tasks(50).await.unwrap();
                if queued.is_empty() {
                    return won;
                }
                for t in queued {
                    if s.cluster()
                        .unwrap()
                        .claim_task(t.id, "d", me)
                        .await
                        .unwrap()
                    {
                        won.push(t.id);
                    }
                }
            }
        }
    };
    let (wa, wb) = tokio::join!(
        tokio::spawn(claimer(a.clone(), "A")),
        tokio::spawn(claimer(b.clone(), "B"))
    );
    let (wa, wb) = (wa.unwrap(), wb.unwrap());
    assert_eq!(wa.len() + wb.len(), 200, "every task claimed exactly once");
    let won: HashSet<TaskId> = wa.iter().chain(&wb).copied().collect();
    assert_eq!(won, all, "no task claimed twice, none left");
    for id in &wa {
        assert_eq!(instance_of(&a, *id).await.as_deref(), Some("A"));
        assert_eq!(a.get_task(*id).await.unwrap().status, TaskStatus::Running);
    }
    a.close().await;
    b.close().await;
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_recovery_touches_only_its_own_instances_tasks() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (a, b) = two(&db).await;
    let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
    assert_eq!(
        ca.join(&row("A"), DEAD_AFTER).await.unwrap(),
        JoinOutcome::Joined
    );
    assert_eq!(
        cb.join(&row("B"), DEAD_AFTER).await.unwrap(),
        JoinOutcome::Joined
    );
    let on_a = a.create_task(spec("on a")).await.unwrap().id;
    let on_b = a.create_task(spec("on b")).await.unwrap().id;
    let legacy = a.create_task(spec("no instance")).await.unwrap().id;
    assert!(ca.claim_task(on_a, "a-1", "A").await.unwrap());
    assert!(cb.claim_task(on_b, "b-1", "B").await.unwrap());
    assert!(a.start_task(legacy, "x").await.unwrap());

    // A restarts while B is live: only A's task is A's to recover.
    let got = ca
        .recover_instance("A", DEAD_AFTER, false, "restarted")
        .await
        .unwrap();
    assert_eq!(got, vec![on_a]);
    assert_eq!(
        a.get_task(on_a).await.unwrap().status,
        TaskStatus::Interrupted
    );
    assert_eq!(a.get_task(on_b).await.unwrap().status, TaskStatus::Running);
    assert_eq!(
        a.get_task(legacy).await.unwrap().status,
        TaskStatus::Running
    );

    // With nobody else live, a task with no instance is recovered too (requeued here).
    age(&a, "B").await;
    let got = ca
        .recover_instance("A", DEAD_AFTER, true, "restarted")
        .await
        .unwrap();
    assert_eq!(got, vec![legacy]);
    assert_eq!(a.get_task(legacy).await.unwrap().status, TaskStatus::Queued);
    assert_eq!(a.get_task(on_b).await.unwrap().status, TaskStatus::Running);
    a.close().await;
    b.close().await;
    db.drop_now().await;
}

fn device(id: &str) -> FarmDevice {
    FarmDevice {
        instance: String::new(),
        id: id.into(),
        backend: "sim".into(),
        serial: id.into(),
        model: "Pixel".into(),
        state: "leased".into(),
        last_seen: None,
        owner_live: true,
        owner_url: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_instance_is_reaped_once_its_tasks_interrupted_and_phones_offline() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (a, b) = two(&db).await;
    let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
    ca.join(&row("A"), DEAD_AFTER).await.unwrap();
    cb.join(&row("B"), DEAD_AFTER).await.unwrap();
    // Both instances call their phone `sim-1`: the rows are (instance, id).
    ca.sync_devices("A", &[device("sim-1"), device("a-2")])
        .await
        .unwrap();
    cb.sync_devices("B", &[device("sim-1")]).await.unwrap();
    let mut held = Vec::new();
    for i in 0..5 {
        let id = a.create_task(spec(&format!("long {i}"))).await.unwrap().id;
        assert!(ca.claim_task(id, "sim-1", "A").await.unwrap());
        held.push(id);
    }
    let on_b = a.create_task(spec("on b")).await.unwrap().id;
    assert!(cb.claim_task(on_b, "sim-1", "B").await.unwrap());
    held.sort();

    assert_eq!(
        cb.reap_one("B", DEAD_AFTER, false, &|n: &str| format!("{n} died"))
            .await
            .unwrap(),
        None,
        "nobody is dead yet"
    );
    age(&a, "A").await;
    // B and a third reaper (C) race; C's own name is different from both.
    let reason = |n: &str| format!("instance `{n}` died");
    let (rb, rc) = tokio::join!(
        cb.reap_one("B", DEAD_AFTER, false, &reason),
        ca.reap_one("C", DEAD_AFTER, false, &reason)
    );
    let reaped: Vec<_> = [rb.unwrap(), rc.unwrap()].into_iter().flatten().collect();
    assert_eq!(reaped.len(), 1, "exactly one reaper took A: {reaped:?}");
    assert_eq!(reaped[0].instance, "A");
    assert_eq!(reaped[0].tasks, held);
    assert_eq!(reaped[0].devices, 2);
    for id in &held {
        let t = a.get_task(*id).await.unwrap();
        assert_eq!(t.status, TaskStatus::Interrupted);
        assert_eq!(t.reason.as_deref(), Some("instance `A` died"));
    }
    assert_eq!(
        a.get_task(on_b).await.unwrap().status,
        TaskStatus::Running,
        "B's task untouched"
    );
    let farm = cb.farm_devices(DEAD_AFTER).await.unwrap();
    let states: Vec<(String, String, String, bool)> = farm
        .iter()
        .map(|f| {
            (
                f.instance.clone(),
                f.id.clone(),
                f.state.clone(),
                f.owner_live,
            )
        })
        .collect();
    assert_eq!(
        states,
        vec![
            ("A".into(), "a-2".into(), "offline".into(), false),
            ("A".into(), "sim-1".into(), "offline".into(), false),
            ("B".into(), "sim-1".into(), "leased".into(), true),
        ]
    );
    assert_eq!(
        cb.reap_one("B", DEAD_AFTER, false, &reason).await.unwrap(),
        None,
        "reaped once"
    );
    a.close().await;
    b.close().await;
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_instances_name_is_not_taken_and_a_dead_ones_is() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (a, b) = two(&db).await;
    let first = row("host-1");
    let second = row("host-1");
    assert_eq!(
        a.cluster().unwrap().join(&first, DEAD_AFTER).await.unwrap(),
        JoinOutcome::Joined
    );
    assert!(matches!(
        b.cluster()
            .unwrap()
            .join(&second, DEAD_AFTER)
            .await
            .unwrap(),
        JoinOutcome::NameHeld { .. }
    ));
    age(&a, "host-1").await;
    assert_eq!(
        b.cluster()
            .unwrap()
            .join(&second, DEAD_AFTER)
            .await
            .unwrap(),
        JoinOutcome::Joined
    );
    // The first holder's heartbeat now finds its name taken.
    assert_eq!(
        a.cluster().unwrap().heartbeat(&first).await.unwrap(),
        droidpilot::store::cluster::Heartbeat::NameTaken
    );
    a.close().await;
    b.close().await;
    db.drop_now().await;
}

#[tokio::test]
async fn sqlite_is_one_host_and_has_no_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let s = droidpilot::store::SqliteStore::open(&dir.path().join("db.sqlite"))
        .await
        .unwrap();
    assert!(s.cluster().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_requeue_a_dead_instances_tasks_go_back_to_the_queue_for_anyone() {
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (a, b) = two(&db).await;
    let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
    ca.join(&row("A"), DEAD_AFTER).await.unwrap();
    let id = a.create_task(spec("long")).await.unwrap().id;
    assert!(ca.claim_task(id, "a-1", "A").await.unwrap());
    age(&a, "A").await;
    let reason = |n: &str| format!("instance `{n}` died; requeued");
    let dead = cb
        .reap_one("B", DEAD_AFTER, true, &reason)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(dead.tasks, vec![id]);
    let t = b.get_task(id).await.unwrap();
    assert_eq!(t.status, TaskStatus::Queued);
    assert_eq!(t.reason.as_deref(), Some("instance `A` died; requeued"));
    assert_eq!(instance_of(&b, id).await, None, "no longer A's");
    assert!(
        cb.claim_task(id, "b-1", "B").await.unwrap(),
        "B may take it"
    );
    assert_eq!(instance_of(&b, id).await.as_deref(), Some("B"));
    a.close().await;
    b.close().await;
    db.drop_now().await;
}
