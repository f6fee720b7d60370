//! The Maestro flow language as Maestro runs it, for Android. Pure: text and screen
//! trees in, typed values out; no device, no files, no clock.
//!
//! - `parse::parse_flow`: a flow file → `ast::Flow` (header, commands with their lines),
//!   every command of Maestro's reference; what cannot work on Android or here is
//!   refused with its line and the reason (`error::ParseError`).
//! - `selector`: which element of a `screen::UiTree` a Maestro selector picks.
//! - `expr`: `${…}`, `env`, `output`, `maestro`, `evalScript` / `runScript` /
//!   `assertTrue` on an embedded JavaScript engine.
//! - `print`: a flow written back as Maestro YAML (`parse_flow(print(f))` is `f`).
//! - `heal`: a healed selector written back into a flow file, as Maestro YAML.
//! - `workspace`: a folder as `maestro test` takes it (`config.yaml`, `runFlow` files,
//!   tags, `-e`), over an in-memory file map.
//!
//! # Design note: the executor (to be built in `droidpilot-app`)
//!
//! The executor walks a `Flow` with one `expr::Scope` per flow run:
//! 1. Put `-e` values, then the header's `env` (each evaluated, so
//!    `${USER || 'guest'}` sees `-e USER`), into the scope; a null `env` value stays
//!    unset. Run `onFlowStart`, the commands, then `onFlowComplete` (always, even after a
//!    failure; its failure fails the flow).
//! 2. Before each command, interpolate its `Text` fields with `Scope::interpolate` (an
//!    undefined result is an error naming the expression, never the text "undefined"
//!    or "null"), and turn `Amount::Expr` into a number the same way.
//! 3. Leaf commands become device actions. Element lookups read the screen and call
//!    `selector::find` until it answers or the lookup times out: 17 s, or 7 s for an
//!    `optional` command (Maestro's defaults), `extendedWaitUntil`'s own `timeout`.
//!    `assertNotVisible` waits up to the same time for the element to go. A tap with
//!    `retryTapIfNoChange` taps again once when the screen did not change;
//!    `waitForAnimationToEnd` and `waitToSettleTimeoutMs` compare screens until two in a
//!    row are equal (never a blind sleep).
//! 4. Control flow recurses: `RunFlow` evaluates `when` (all parts must hold; `visible`
//!    waits at most 7 s), pushes its `env` into the scope and runs the inline commands or
//!    the file `workspace` loaded for it (with that file's own `onFlowStart` /
//!    `onFlowComplete`); `Repeat` loops `times` and/or `while`; `Retry` reruns its
//!    commands up to `max_retries` more times (Maestro caps it at 3).
//! 5. `optional: true` turns a failure into a warning and goes on. `label` replaces the
//!    command's description in reports (and hides typed text there).
//! 6. Each leaf command is one task step, so trajectories, exports and take-over work;
//!    the step records the command's line.

pub mod ast;
pub mod error;
pub mod expr;
pub mod heal;
pub mod parse;
pub mod print;
pub mod selector;
pub mod workspace;
pub mod yaml;

pub use error::ParseError;
pub use parse::parse_flow;
