//! Devices in the application: the `Device` trait and its types (from `droidpilot-core`),
//! the backends (`sim`, the virtual phone from `droidpilot-sim`; `adb`, real phones through
//! an adb server), the pool that leases them to tasks, and what runs actions on them.

pub use droidpilot_core::device::*;

pub mod adb;
pub mod pool;
pub use droidpilot_sim as sim;

pub mod exec;
pub mod scroll_find;
pub mod thumb;
