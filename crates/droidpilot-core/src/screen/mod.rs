//! Screen understanding: uiautomator XML → `UiTree` → what the model reads, plus
//! selectors, layout hashes and diffs. Every token droidpilot pays for passes through here.
//!
//! Entry points: `represent` (dump → tree + `ScreenRepresentation`), `parse`/`parse_bytes`
//! (dump → tree), `Screen` (a parsed screen with its element map, for lookups), and
//! `resolve_target` (an action's `Target` → `Bounds`, for the executor).

pub mod diff;
pub mod elements;
pub mod hash;
pub mod inspect;
pub mod modal;
pub mod ocr;
pub mod parse;
pub mod pipeline;
pub mod redact;
pub mod representation;
pub mod resolve;
pub mod scan;
pub mod selector;
pub mod text;
pub mod tokens;
pub mod tree;

pub use crate::domain::ElementSource;
pub use diff::{TreeDiff, diff};
pub use elements::{Element, ElementMap, REDACTED, TextItem, element_map};
pub use hash::{LayoutHash, content_hash, layout_hash};
pub use modal::has_modal;
pub use parse::{ParseError, parse, parse_bytes};
pub use pipeline::{ReprOptions, Screen, represent};
pub use redact::RedactionPattern;
pub use representation::{ActionableElement, ElementAction, ScreenRepresentation};
pub use resolve::{ResolveError, resolve_selector, resolve_target};
pub use selector::{Matches, Selector, SelectorError, SelectorIndex};
pub use text::{CompactOptions, compact_text, tree_text};
pub use tokens::count_o200k;
pub use tree::{UiNode, UiTree};
