//! Scripts: a flow recorded once and replayed with no model, recovered with one when a
//! step breaks (AI in the middle). This module owns the script document (`model`), its
//! `${var}` substitution (`vars`) and recovery-hint triggers (`hints`) and the stored form (`stored`); recording, replay,
//! Maestro interop and storage build on these types.

pub mod custom;
pub mod hints;
pub mod maestro;
pub mod model;
pub mod record;
pub mod stored;
pub mod vars;

/// A script's id lives with the other ids in the domain; re-exported where scripts are.
pub use crate::domain::task::ScriptId;
pub use custom::CustomCall;
pub use hints::{Failure, Trigger};
pub use model::{
    Expect, RecoveryHint, Script, ScriptError, ScriptSource, ScriptStep, StepAction,
    StepParameters, WaitCondition,
};
pub use stored::{ScriptPage, ScriptRecord};
pub use vars::Vars;
