//! The application's use cases: submitting, cancelling and answering tasks, taking one
//! over, running a script, acting on and reading a device, and recording a step taken
//! outside the agent loop. The front ends (HTTP in `server`, MCP in `mcp::server`, the
//! CLI) parse their input, call one function here and map its `AppError`; none of them
//! holds a use case, and none imports another front end.

pub mod devices;
pub mod error;
pub mod flow_runs;
pub mod images;
pub mod manual;
pub mod remote;
pub mod scripts;
pub mod takeover;
pub mod tasks;
pub mod workspaces;

pub use error::{AppError, ErrorKind};
pub use manual::manual_step;
