//! Two processes starting at once on a fresh database (`serve` and `mcp`, or two `mcp`
//! clients) both open the store and run its migrations: both must start, many times over.
//! SQLite takes a lock file around its migrations; on PostgreSQL sqlx's migrator holds an
//! advisory lock.

use droidpilot::store::{PostgresStore, SqliteStore, Store};

use crate::common::pg::FreshDb;

const TRIES: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_opening_a_fresh_sqlite_file_at_once_both_start() {
    for i in 0..TRIES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("droidpilot.db");
        let open = || {
            let path = path.clone();
            tokio::spawn(async move { SqliteStore::open(&path).await })
        };
        let (a, b) = (open(), open());
        for s in [a.await.unwrap(), b.await.unwrap()] {
            let s = s.unwrap_or_else(|e| panic!("try {i}: {e}"));
            s.ping().await.unwrap();
            s.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_migrating_a_fresh_postgres_database_at_once_both_start() {
    for i in 0..TRIES / 5 {
        let Some(db) = FreshDb::create().await else {
            return;
        };
        let open = || {
            let url = db.url.clone();
            tokio::spawn(async move { PostgresStore::connect(&url, 2).await })
        };
        let (a, b) = (open(), open());
        for s in [a.await.unwrap(), b.await.unwrap()] {
            let s = s.unwrap_or_else(|e| panic!("try {i}: {e}"));
            s.ping().await.unwrap();
            s.close().await;
        }
        db.drop_now().await;
    }
}
