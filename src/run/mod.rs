//! Running tasks: the queue operations the API calls (submit, cancel) and, as it grows,
//! the scheduler and the per-task runner loop.

pub mod events;
pub mod interaction;
pub mod queue;
