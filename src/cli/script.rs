//! `droidpilot script …`: record a finished task as a script, run a script (a file or a
//! stored id) in the terminal like `droidpilot run`, and move scripts in and out of the
//! database as JSON documents.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Subcommand, ValueEnum};

use crate::config::{Config, Overrides};
use crate::domain::TaskId;
use crate::script::{Script, ScriptId, ScriptRecord, ScriptSource, record, vars};
use crate::store::Store;

#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    /// Turn a finished task's successful steps into a stored script and print it.
    Record(RecordArgs),
    /// Run a script (a JSON file, or a stored script's id) on a device, without the server.
    Run(ScriptRunArgs),
    /// Print a stored script (latest version) as a document.
    Export(ExportArgs),
    /// Store a script document from a file and print its id.
    Import(ImportArgs),
}

/// Where the database is (as `droidpilot export`).
#[derive(Debug, clap::Args)]
pub struct DataArgs {
    /// A TOML file layered over the defaults (to find the data directory).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The data directory holding droidpilot.db (default ./data).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    pub task_id: TaskId,
    /// Also write the script document to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
}

#[derive(Debug, clap::Args)]
pub struct ScriptRunArgs {
    /// A JSON script document, or a stored script's id.
    pub script: String,
    /// A value for a declared input, `name=value` (repeatable).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// The device to run on (default: an available virtual phone).
    #[arg(long)]
    pub device: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub max_steps: u32,
    #[command(flatten)]
    pub data: DataArgs,
}

/// A script document's format on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Maestro,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    pub id: ScriptId,
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    #[command(flatten)]
    pub data: DataArgs,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    #[command(flatten)]
    pub data: DataArgs,
}

fn load_config(d: &DataArgs) -> anyhow::Result<Config> {
    Ok(Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: d.config.clone(),
            data_dir: d.data_dir.clone(),
            ..Default::default()
        },
    )?)
}

async fn open_store(d: &DataArgs) -> anyhow::Result<Arc<dyn Store>> {
    super::open_existing_store(&load_config(d)?).await
}

fn maestro_error(path: &str, e: crate::script::maestro::MaestroError) -> anyhow::Error {
    anyhow::anyhow!("{path}: {e}. {}", e.hint)
}

/// `droidpilot script …`. Returns whether it succeeded (a run may end without success).
pub async fn script(cmd: ScriptCommand) -> anyhow::Result<bool> {
    match cmd {
        ScriptCommand::Record(a) => record_task(a).await.map(|()| true),
        ScriptCommand::Run(a) => run(a).await,
        ScriptCommand::Export(a) => export(a).await.map(|()| true),
        ScriptCommand::Import(a) => import(a).await.map(|()| true),
    }
}

async fn record_task(a: RecordArgs) -> anyhow::Result<()> {
    let store = open_store(&a.data).await?;
    let task = store.get_task(a.task_id).await?;
    if !task.status.is_terminal() {
        anyhow::bail!(
            "task {} has not finished ({:?}); record it when it has",
            task.id,
            task.status
        );
    }
    let steps = store.steps(task.id).await?;
    let script = record::from_steps(&task.spec.instruction, &steps)?;
    let rec = store
        .create_script(&script, ScriptSource::Task { task_id: task.id })
        .await?;
    let doc = serde_json::to_string_pretty(&rec.script)?;
    if let Some(out) = &a.out {
        std::fs::write(out, format!("{doc}\n"))?;
        eprintln!("wrote {}", out.display());
    }
    println!("{doc}");
    eprintln!("stored as script {} version {}", rec.id, rec.version);
    Ok(())
}

async fn export(a: ExportArgs) -> anyhow::Result<()> {
    let rec: ScriptRecord = open_store(&a.data).await?.script(a.id, None).await?;
    if a.format == Format::Maestro {
        let yaml = crate::script::maestro::export(&rec.script)
            .map_err(|e| maestro_error(&rec.id.to_string(), e))?;
        print!("{yaml}");
        return Ok(());
    }
    println!("{}", serde_json::to_string_pretty(&rec.script)?);
    Ok(())
}

fn read_document(path: &std::path::Path) -> anyhow::Result<Script> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?;
    Script::from_json(&v).map_err(|e| anyhow::anyhow!("{}: {e}. {}", path.display(), e.hint))
}

async fn import(a: ImportArgs) -> anyhow::Result<()> {
    let (script, source) = if a.format == Format::Maestro {
        let text = std::fs::read_to_string(&a.file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", a.file.display()))?;
        let s = crate::script::maestro::import(&text)
            .map_err(|e| maestro_error(&a.file.display().to_string(), e))?;
        (s, ScriptSource::Maestro)
    } else {
        (read_document(&a.file)?, ScriptSource::Uploaded)
    };
    let rec = open_store(&a.data)
        .await?
        .create_script(&script, source)
        .await?;
    println!("{}", rec.id);
    Ok(())
}

/// `name=value` pairs into a map; a pair without `=` is refused by name.
pub fn parse_inputs(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| anyhow::anyhow!("--input `{p}` is not NAME=VALUE"))
        })
        .collect()
}

async fn run(a: ScriptRunArgs) -> anyhow::Result<bool> {
    let inputs = parse_inputs(&a.inputs)?;
    let path = std::path::Path::new(&a.script);
    let mut agent = if path.exists() {
        let script = read_document(path)?;
        serde_json::json!({"kind": "script", "script": script})
    } else {
        let id: ScriptId = a
            .script
            .parse()
            .map_err(|_| anyhow::anyhow!("`{}` is neither a file nor a script id", a.script))?;
        let rec = open_store(&a.data).await?.script(id, None).await?;
        serde_json::json!({"kind": "script", "script": rec.script,
                           "script_id": rec.id, "script_version": rec.version})
    };
    let script: Script = serde_json::from_value(agent["script"].clone())?;
    vars::bind_inputs(&script.inputs, &inputs).map_err(|e| anyhow::anyhow!("{e}. {}", e.hint))?;
    agent["inputs"] = serde_json::to_value(&inputs)?;
    super::run::run(super::run::RunArgs {
        instruction: Some(script.goal),
        device: a.device,
        max_steps: a.max_steps,
        config: a.data.config,
        data_dir: a.data.data_dir,
        agent_value: Some(agent),
        ..super::run::RunArgs::defaults()
    })
    .await
}
