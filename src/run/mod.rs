//! Running tasks: the queue operations the API calls (submit, cancel) and, as it grows,
//! the scheduler and the per-task runner loop.

pub mod artifacts;
pub mod bench;
pub mod events;
pub mod interaction;
pub mod mcp;
pub mod middleware;
pub mod queue;
pub mod runner;
pub mod scheduler;

pub mod stuck;

pub mod result;
pub mod trajectory;
pub mod webhooks;
