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
pub mod split_screen;
pub mod stop;
pub mod stuck;
pub mod takeover;

pub mod metrics;
pub mod result;
pub mod retention;
pub mod trajectory;
pub mod webhooks;
