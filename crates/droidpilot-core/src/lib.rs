//! droidpilot's core: the layer every other crate builds on, with no I/O of its own.
//!
//! Modules, lowest first (a lower one never imports a higher one): `domain` (actions,
//! geometry, tasks, steps, events and their ids), `screen` (a UI dump parsed into elements,
//! selectors, what changed between two screens), `script` (the script document and the
//! Maestro importer: pure data over domain and screen), and `device` (the `Device` trait
//! every phone backend implements, and the screenshot type). `video` (RGBA frames to an
//! H.264 MP4) stands apart: pure computation for the replay and the simulated phone; so does
//! `appstrings` (an app's string resources read from its `resources.arsc`). See ARCHITECTURE.md.

pub mod appstrings;
pub mod device;
pub mod domain;
pub mod screen;
pub mod script;
pub mod video;
