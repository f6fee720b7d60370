//! `droidpilot migrate-store --from sqlite://… --to postgres://…`: copies a SQLite database
//! into an empty PostgreSQL one (`store::migrate`) and prints the rows per table on both
//! sides. Artifacts' files stay where they are: only their index moves, so every instance
//! must see the same `storage.data_dir` (shared volume) to serve screenshots.

use crate::store::{PostgresStore, SqliteStore, StoreLocation};

#[derive(Debug, clap::Args)]
pub struct MigrateStoreArgs {
    /// The SQLite database to copy: sqlite://PATH (stop `droidpilot serve` first).
    #[arg(long)]
    pub from: String,
    /// The empty PostgreSQL database to fill: postgres://USER:PASSWORD@HOST:PORT/DATABASE.
    #[arg(long)]
    pub to: String,
}

/// Copies, verifies, prints the table of counts.
pub async fn run(args: MigrateStoreArgs) -> anyhow::Result<()> {
    let from = match StoreLocation::from_url(&args.from, 1) {
        Ok(StoreLocation::Sqlite(path)) => path,
        Ok(_) => anyhow::bail!("--from must be a SQLite database: sqlite://PATH"),
        Err(e) => anyhow::bail!("--from: {e}"),
    };
    if !from.exists() {
        anyhow::bail!(
            "--from: no database at {}; give the path of the droidpilot.db file `droidpilot serve` uses",
            from.display()
        );
    }
    let to = match StoreLocation::from_url(&args.to, 2) {
        Ok(StoreLocation::Postgres { url, .. }) => url,
        Ok(_) => anyhow::bail!("--to must be a PostgreSQL database: postgres://…"),
        Err(e) => anyhow::bail!("--to: {e}"),
    };
    let shown = crate::store::redact_url(&to);
    let src = SqliteStore::open(&from).await?;
    let dst = PostgresStore::connect(&to, 2)
        .await
        .map_err(|e| anyhow::anyhow!("--to {shown}: {e}"))?;
    let counts = crate::store::migrate::copy_sqlite_to_postgres(&src, &dst).await;
    src.pool().close().await;
    dst.pool().close().await;
    let counts = counts?;
    println!("copied {} → {shown}", from.display());
    println!("{:<14} {:>10} {:>10}", "table", "sqlite", "postgres");
    for c in &counts {
        println!("{:<14} {:>10} {:>10}", c.table, c.source, c.target);
    }
    println!("every table has the same number of rows on both sides");
    Ok(())
}
