//! `droidpilot workspace push|list|versions`: stored Maestro workspaces on a running
//! server (`/v1/workspaces`, through `remote::Remote`). `push` uploads a folder (its
//! files as JSON, read as `flow test DIR` reads them) or a `.zip` (sent as it is) as a
//! new workspace, or with `--workspace ID` as that workspace's next version; a version
//! the server refuses (a flow that does not import: the file and line) is the command's
//! error, as the server wrote it. `flow test --workspace ID[@V]` runs one.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{Value, json};

use super::remote::Remote;
use crate::domain::{WorkspaceId, WorkspacePage, WorkspaceSource, WorkspaceVersion};

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Upload a folder or a .zip of Maestro flows as a new workspace, or as the next version of one (--workspace).
    Push(PushArgs),
    /// The stored workspaces (each one's latest version), newest first.
    List(ServerArgs),
    /// Every version of a workspace, oldest first.
    Versions(VersionsArgs),
}

#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// The running droidpilot server (http://host:port); the token from DROIDPILOT_TOKEN.
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// Print the server's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The workspace: a folder (flows and config.yaml) or a .zip of one.
    pub path: PathBuf,
    /// Add the next version of this stored workspace instead of creating one.
    #[arg(long, value_name = "ID")]
    pub workspace: Option<WorkspaceId>,
    /// The workspace's name (default: the folder's or the .zip's name; a new version
    /// keeps the latest name without it).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, clap::Args)]
pub struct VersionsArgs {
    /// The workspace's id.
    pub id: WorkspaceId,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Runs the command.
pub async fn workspace(cmd: WorkspaceCommand) -> anyhow::Result<()> {
    match cmd {
        WorkspaceCommand::Push(args) => push(&args).await,
        WorkspaceCommand::List(args) => list(&args).await,
        WorkspaceCommand::Versions(args) => versions(&args).await,
    }
}

/// Uploads `args.path` and prints the version the server stored.
async fn push(args: &PushArgs) -> anyhow::Result<()> {
    let server = Remote::new(&args.server.server);
    let path = match args.workspace {
        Some(id) => format!("/v1/workspaces/{id}/versions"),
        None => "/v1/workspaces".to_string(),
    };
    // A new workspace needs a name; a new version keeps the latest one unless given.
    let name = match (&args.name, args.workspace) {
        (Some(n), _) => Some(n.clone()),
        (None, None) => Some(default_name(&args.path)),
        (None, Some(_)) => None,
    };
    let stored = if args.path.is_dir() {
        let mut body = json!({"files": super::flow::read_dir(&args.path)?});
        if let Some(n) = name {
            body["name"] = json!(n);
        }
        server.post(&path, &body).await?
    } else {
        let bytes = read_zip(&args.path)?;
        let query: Vec<(&str, &str)> = name.iter().map(|n| ("name", n.as_str())).collect();
        let r = server
            .request(reqwest::Method::POST, &path, &query)
            .header(reqwest::header::CONTENT_TYPE, "application/zip")
            .body(bytes);
        super::remote::checked(server.send(r).await?).await?
    };
    if args.server.json {
        println!("{}", serde_json::to_string_pretty(&stored)?);
        return Ok(());
    }
    let v: WorkspaceVersion = serde_json::from_value(stored)?;
    println!("{}", line(&v));
    Ok(())
}

/// A `.zip` file's bytes; anything else that is not a folder is refused.
fn read_zip(path: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {}: {e}\nhint: give a folder of flows or a .zip of one",
            path.display()
        )
    })?;
    if !bytes.starts_with(b"PK") {
        anyhow::bail!(
            "{} is neither a folder nor a .zip\nhint: give a folder of flows or a .zip of one",
            path.display()
        );
    }
    Ok(bytes)
}

/// The folder's name, or the .zip's without its extension.
fn default_name(path: &Path) -> String {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let name = match path.is_dir() {
        true => path.file_name(),
        false => path.file_stem(),
    };
    name.map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "workspace".to_string())
}

/// `ID version N: NAME (F flows, K files)`.
fn line(v: &WorkspaceVersion) -> String {
    let source = match &v.source {
        WorkspaceSource::Uploaded => "uploaded".to_string(),
        WorkspaceSource::Healed { flow_run } => format!("healed by flow run {flow_run}"),
    };
    format!(
        "{} version {}: {} ({} flows, {} files, {source} {})",
        v.id,
        v.version,
        v.name,
        v.config.flows.len(),
        v.files.len(),
        v.created_at.format("%Y-%m-%d %H:%M:%S UTC")
    )
}

/// Every stored workspace, following the pages.
async fn list(args: &ServerArgs) -> anyhow::Result<()> {
    let server = Remote::new(&args.server);
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("limit", "100")];
        if let Some(c) = &cursor {
            query.push(("cursor", c.as_str()));
        }
        let r = server.request(reqwest::Method::GET, "/v1/workspaces", &query);
        let body = super::remote::checked(server.send(r).await?).await?;
        let page: WorkspacePage = serde_json::from_value(body)?;
        all.extend(page.workspaces);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else if all.is_empty() {
        println!("no workspaces (store one with `droidpilot workspace push DIR`)");
    } else {
        all.iter().for_each(|v| println!("{}", line(v)));
    }
    Ok(())
}

/// A workspace's versions, oldest first.
async fn versions(args: &VersionsArgs) -> anyhow::Result<()> {
    let server = Remote::new(&args.server.server);
    let body: Value = server
        .get(&format!("/v1/workspaces/{}/versions", args.id))
        .await?;
    if args.server.json {
        println!("{}", serde_json::to_string_pretty(&body)?);
        return Ok(());
    }
    let all: Vec<WorkspaceVersion> = serde_json::from_value(body)?;
    all.iter().for_each(|v| println!("{}", line(v)));
    Ok(())
}
