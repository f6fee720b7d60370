//! `droidpilot screen DUMP.xml|- [--format tree|compact|json] [--tokens]`: prints what a
//! model would read for a dump. For people debugging their own app's dump, and for tests.
//! `src/main.rs` wires `ScreenArgs` as the `screen` subcommand.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::Context;

use crate::screen::parse::{ParseError, decode, parse, require_views};
use crate::screen::pipeline::{ReprOptions, Screen};
use crate::screen::tokens::count_o200k;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Every node with its index path (the seed format).
    Tree,
    /// What models read: actionable elements and visible text.
    Compact,
    /// The ScreenRepresentation JSON agents consume.
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ScreenArgs {
    /// A uiautomator dump (`adb shell uiautomator dump`), or `-` for stdin.
    pub dump: PathBuf,
    /// Which representation to print.
    #[arg(long, value_enum, default_value_t = Format::Compact)]
    pub format: Format,
    /// Also print the o200k token count of every format.
    #[arg(long)]
    pub tokens: bool,
}

/// Runs the subcommand, writing to `out`.
pub fn run(args: &ScreenArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = if args.dump.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .context("reading the dump from stdin")?;
        b
    } else {
        std::fs::read(&args.dump).with_context(|| format!("reading {}", args.dump.display()))?
    };
    run_on_bytes(&bytes, args, out)
}

/// `run` on a dump already in memory (stdin and files both end here).
pub fn run_on_bytes(bytes: &[u8], args: &ScreenArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let with_hint = |e: ParseError| anyhow::anyhow!("{e}\nhint: {}", e.hint());
    let text = decode(bytes).map_err(with_hint)?;
    let opts = ReprOptions::default();
    // A file that yields no view is refused, not printed as an empty screen.
    let tree = parse(&text).and_then(require_views).map_err(with_hint)?;
    let screen = Screen::new(tree, &opts);
    let tree = screen.tree_text(None);
    let compact = screen.compact(&opts.compact);
    let json = serde_json::to_string_pretty(&screen.representation(&opts))?;
    let shown = match args.format {
        Format::Tree => &tree,
        Format::Compact => &compact,
        Format::Json => &json,
    };
    out.write_all(shown.as_bytes())?;
    if !shown.ends_with('\n') {
        writeln!(out)?;
    }
    if args.tokens {
        writeln!(out, "---")?;
        writeln!(
            out,
            "o200k tokens: tree {}, compact {}, json {}",
            count_o200k(&tree),
            count_o200k(&compact),
            count_o200k(&json)
        )?;
        writeln!(
            out,
            "actionable elements: {} (all present in every format)",
            screen.elements.elements.len()
        )?;
    }
    Ok(())
}
