//! Running tasks: the queue operations the API calls (submit, cancel), the event bus, the
//! scheduler and the per-task runner loop, and what hangs off them (questions to people,
//! artifacts, MCP routing, middleware, results, webhooks, trajectories, the bench), and
//! the relay that joins this instance's bus and runners to the others on a shared database.

pub mod app_control;
pub mod artifacts;
pub mod events;
pub mod extend;
pub mod finish;
pub mod flow_check;
pub mod hooks;
pub mod interaction;
pub mod mcp;
pub mod middleware;
pub mod queue;
pub mod relay;
pub mod runner;
pub mod scheduler;
pub mod scroll_find;

/// The custom actions the core registers on every runner, which a replay's action list
/// may name as well (`flow_check` is the flow agent's own).
pub const EVERY_RUNNER: &[&str] = &[
    scroll_find::NAME,
    app_control::STOP,
    app_control::CLEAR,
    split_screen::NAME,
];
pub mod split_screen;
pub mod stop;
pub mod stuck;
pub mod takeover;

pub mod metrics;
pub mod result;
pub mod retention;
pub mod trajectory;
pub mod webhooks;
