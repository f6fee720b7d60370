//! Where the store lives, and opening it: `StoreLocation` (a SQLite file or a PostgreSQL
//! URL, from `[storage]`), `open` (the one place a backend is chosen), and `redact_url`,
//! which every message about a URL goes through so its password is never shown.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use super::{PostgresStore, SqliteStore, Store, StoreError};

/// `[storage]`: where the data lives and how long it is kept.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    pub data_dir: PathBuf,
    /// The SQLite file, relative to `data_dir` (used when `database_url` is empty).
    pub database: PathBuf,
    /// `postgres://USER:PASSWORD@HOST:PORT/DB` or `sqlite://PATH`; empty: `database`.
    #[serde(default)]
    pub database_url: String,
    /// Connections each instance keeps to PostgreSQL.
    #[serde(default = "default_pool_size")]
    pub pool_size: u32,
    /// Tasks that ended more than this many days ago are deleted (0: kept forever).
    #[serde(default)]
    pub retain_days: u32,
    /// Screenshots older than this many days, shown by no more recent task, are deleted
    /// (0: kept forever).
    #[serde(default)]
    pub retain_artifact_days: u32,
    /// How often the server sweeps for what expired.
    #[serde(default = "default_retention_interval")]
    pub retention_interval_secs: u64,
}

fn default_retention_interval() -> u64 {
    3600
}

fn default_pool_size() -> u32 {
    8
}

// The URL holds a password: Debug shows it as `***`.
impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field("data_dir", &self.data_dir)
            .field("database", &self.database)
            .field("database_url", &redact_url(&self.database_url))
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// A database to open.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL server: the URL (with its password) and the pool size.
    Postgres { url: String, pool_size: u32 },
}

impl StoreLocation {
    /// Reads a `database_url`: `sqlite://PATH` (relative paths from the working
    /// directory) or `postgres://…` / `postgresql://…`. The error names what is wrong.
    pub fn from_url(url: &str, pool_size: u32) -> Result<Self, String> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(
                    "`sqlite://` needs a file path, e.g. sqlite://./data/droidpilot.db".into(),
                );
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres {
                url: url.into(),
                pool_size,
            });
        }
        Err(format!(
            "`{}` is neither sqlite://PATH nor postgres://USER:PASSWORD@HOST:PORT/DATABASE",
            redact_url(url)
        ))
    }

    /// Which backend: `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres { .. } => "postgres",
        }
    }
}

/// The location as it may be shown: a path, or the URL with its password as `***`.
impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(p) => write!(f, "{}", p.display()),
            Self::Postgres { url, .. } => f.write_str(&redact_url(url)),
        }
    }
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreLocation({}: {self})", self.backend())
    }
}

/// Opens the store at `loc`, running its migrations.
pub async fn open(loc: &StoreLocation) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match loc {
        StoreLocation::Sqlite(path) => Arc::new(SqliteStore::open(path).await?),
        StoreLocation::Postgres { url, pool_size } => {
            Arc::new(PostgresStore::connect(url, *pool_size).await?)
        }
    })
}

/// `url` with the password (in the user part, or a `password=` parameter) replaced by
/// `***`; anything else is kept, so the operator still sees host, port and database.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.into();
    };
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        for (url, shown) in [
            (
                "postgres://dp:s3cr@t@db.example:5432/dp",
                "postgres://dp:***@db.example:5432/dp",
            ),
            (
                "postgresql://dp@db/dp?sslmode=require&password=s3cret",
                "postgresql://dp@db/dp?sslmode=require&password=***",
            ),
            ("postgres://db:5432", "postgres://db:5432"),
            ("sqlite://./data/x.db", "sqlite://./data/x.db"),
        ] {
            assert_eq!(redact_url(url), shown);
        }
        let loc = StoreLocation::from_url("postgres://u:hunter22@h/d", 4).unwrap();
        assert!(!format!("{loc} {loc:?}").contains("hunter22"));
    }

    #[test]
    fn the_scheme_chooses_the_backend() {
        assert_eq!(
            StoreLocation::from_url("sqlite://./data/x.db", 4).unwrap(),
            StoreLocation::Sqlite("./data/x.db".into())
        );
        assert_eq!(
            StoreLocation::from_url("postgresql://h/d", 4)
                .unwrap()
                .backend(),
            "postgres"
        );
        let e = StoreLocation::from_url("mysql://u:hunter22@h/d", 4).unwrap_err();
        assert!(e.contains("postgres://") && !e.contains("hunter22"), "{e}");
        assert!(StoreLocation::from_url("sqlite://", 4).is_err());
    }
}
