//! PostgreSQL for tests: `FreshDb` creates an empty database `dp_<uuid>` on the cluster at
//! `DROIDPILOT_TEST_POSTGRES_URL` (started by `.ci/postgres`) and drops it afterwards.
//! Without that variable the PostgreSQL half of a test skips loudly, and fails when
//! `DROIDPILOT_REQUIRE_POSTGRES=1` (as in CI).

use sqlx::{Connection, Executor};

/// The shared test cluster's admin URL, or None (after a loud notice) when there is none.
pub fn admin_url() -> Option<String> {
    match std::env::var("DROIDPILOT_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            if std::env::var("DROIDPILOT_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!(
                    "DROIDPILOT_REQUIRE_POSTGRES=1 but DROIDPILOT_TEST_POSTGRES_URL is not set \
                     (run `source .ci/postgres` first)"
                );
            }
            eprintln!("\n####################################################################");
            eprintln!("## SKIPPED (PostgreSQL half): DROIDPILOT_TEST_POSTGRES_URL is unset. ##");
            eprintln!("## `source .ci/postgres` starts a throw-away cluster; set           ##");
            eprintln!("## DROIDPILOT_REQUIRE_POSTGRES=1 to make this a failure.            ##");
            eprintln!("####################################################################\n");
            None
        }
    }
}

/// `url` pointing at database `db` instead of the one it names.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let (server, _) = base.rsplit_once('/').expect("a URL with a database path");
    format!("{server}/{db}{query}")
}

/// An empty database of its own; `drop_now` removes it.
pub struct FreshDb {
    admin: String,
    pub name: String,
    pub url: String,
}

impl FreshDb {
    /// None when no cluster is configured (skipped loudly, or a panic under REQUIRE).
    pub async fn create() -> Option<Self> {
        let admin = admin_url()?;
        let name = format!("dp_{}", uuid::Uuid::new_v4().simple());
        let mut c = sqlx::PgConnection::connect(&admin)
            .await
            .expect("the test cluster accepts the admin URL");
        c.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .expect("create the test database");
        let _ = c.close().await;
        let url = with_database(&admin, &name);
        Some(Self { admin, name, url })
    }

    /// Drops the database (closing whatever still holds it).
    pub async fn drop_now(self) {
        if let Ok(mut c) = sqlx::PgConnection::connect(&self.admin).await {
            let _ = c
                .execute(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                )))
                .await;
            let _ = c.close().await;
        }
    }
}
