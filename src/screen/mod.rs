//! Screen understanding: uiautomator XML → `UiTree` → what the model reads, plus
//! selectors, layout hashes and diffs. Every token droidpilot pays for passes through here.

pub mod representation;

pub use representation::{ActionableElement, ElementAction, ScreenRepresentation};
