//! Pure domain types: actions, geometry, tasks, steps, events and their ids. No I/O here;
//! every other layer builds on these.

pub mod action;
pub mod annotation;
pub use annotation::{
    Annotation, Approach, ChainDecide, ConsensusOutcome, GroundingReason, ModelCall, ModelRole,
    Plan, PlanTrigger, Proposal, SplitRecommendation, StaleOutcome, TieRule,
};
pub mod element;
pub mod geometry;
pub mod shell;

pub use action::{Action, ActionError, ActionParser, AppRef, Direction, Key, Orientation, Target};
pub use element::{ActionableElement, ElementAction, ElementSource};
pub use geometry::{
    AffineTransform, Bounds, CoordinateTransform, LinearTransform, NormPoint, PixelPoint,
    ScreenSize,
};
pub mod task;
pub use task::{
    AgentSummary, NewTask, RecordingSegment, ScriptId, Task, TaskId, TaskSpec, TaskSpecError,
    TaskStatus, TaskSummary,
};
pub mod eta;
pub use eta::{Estimate, EtaBasis, TaskEstimate};
pub mod event;
pub mod flow_run;
pub use event::{ResumeCause, StuckResponse, TaskEvent, TaskFinished};
pub use flow_run::{
    FlowAttempt, FlowFailure, FlowResult, FlowRun, FlowRunId, FlowRunPage, FlowRunStatus,
    FlowStatus,
};
pub mod retry;
pub use retry::RetryPolicy;
pub mod workspace;
pub use workspace::{
    StoredWorkspace, WorkspaceContents, WorkspaceFile, WorkspaceFlow, WorkspaceId, WorkspacePage,
    WorkspaceRef, WorkspaceSource, WorkspaceSummary, WorkspaceVersion,
};
pub mod intervention;
pub mod step;
pub use intervention::{Intervention, InterventionKind};
pub use step::{
    Fallback, MatchInfo, RecoveryType, ReplayInfo, ReplayRole, Step, StepOutcome, StepScreen,
    StepStatus, StepTimings, Translated,
};
