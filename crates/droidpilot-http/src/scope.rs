//! What a token may do. A token has one scope: `read` (list and watch: every GET, SSE,
//! the WebSocket's subscriptions), `operate` (also submit, answer, cancel, take over, act
//! on a phone by hand, run a script, `/mcp`) or `admin` (also add and remove devices,
//! write and delete scripts, delete tasks). A plain token in `server.tokens` is `admin`.
//! `[[server.tokens]]` entries give a scope and a name; the name is who the token is in
//! interventions (`by`, `answered_by`).
//!
//! `auth` (`middleware.rs`) finds the caller's grant and checks it here against the
//! route; a write route this table does not name needs `admin`, so a new endpoint is
//! closed until it is placed.

use axum::http::{Method, StatusCode};

use super::error::ApiError;
pub use crate::config::Scope;

/// Who is calling: the grant of the token presented (a request extension set by `auth`;
/// absent when the server has no tokens, which allows everything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub scope: Scope,
    /// The token's `name`, when it has one.
    pub name: Option<String>,
}

impl Caller {
    /// Refuses with 403 unless the caller's scope includes `needed`.
    pub fn allows(&self, needed: Scope, what: &str) -> Result<(), ApiError> {
        if self.scope >= needed {
            return Ok(());
        }
        Err(forbidden(needed, self.scope, what))
    }

    /// Who to record in an intervention: the token's name, with the self-declared `by` of
    /// the request beside it when both are given.
    pub fn by(caller: Option<&Caller>, declared: Option<String>) -> Option<String> {
        match (caller.and_then(|c| c.name.clone()), declared) {
            (Some(name), Some(by)) if by != name => Some(format!("{name} ({by})")),
            (Some(name), _) => Some(name),
            (None, by) => by,
        }
    }
}

/// The 403 in the error shape, naming the scope needed.
pub fn forbidden(needed: Scope, have: Scope, what: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "insufficient_scope",
        format!(
            "{what} needs a token with scope `{}`; this one has `{}`",
            needed.as_str(),
            have.as_str()
        ),
        format!(
            "Use a token whose scope is `{}` or wider (server.tokens: read < operate < admin; a plain token is admin).",
            needed.as_str()
        ),
    )
}

/// The scope a request needs, by method and path.
pub fn required(method: &Method, path: &str) -> Scope {
    if path == "/mcp" || path.starts_with("/mcp/") {
        // MCP tools act on phones and submit tasks.
        return Scope::Operate;
    }
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Scope::Read;
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["v1", "tasks"] => Scope::Operate,
        ["v1", "tasks", _] if *method == Method::DELETE => Scope::Admin,
        [
            "v1",
            "tasks",
            _,
            "cancel" | "answer" | "pause" | "resume" | "actions",
        ] => Scope::Operate,
        ["v1", "devices", _, "actions"] => Scope::Operate,
        ["v1", "devices", _, "control", ..] => Scope::Operate,
        ["v1", "scripts", id, "run"] if *id != "import" => Scope::Operate,
        ["v1", "flow-runs"] | ["v1", "flow-runs", _, "cancel"] => Scope::Operate,
        _ => Scope::Admin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_need_the_scope_of_what_they_do() {
        let cases = [
            (Method::GET, "/v1/tasks", Scope::Read),
            (Method::GET, "/v1/ws", Scope::Read),
            (Method::GET, "/v1/tasks/x/events", Scope::Read),
            (Method::POST, "/v1/tasks", Scope::Operate),
            (Method::POST, "/v1/tasks/x/cancel", Scope::Operate),
            (Method::POST, "/v1/tasks/x/answer", Scope::Operate),
            (Method::POST, "/v1/tasks/x/actions", Scope::Operate),
            (Method::POST, "/v1/devices/sim-1/actions", Scope::Operate),
            (Method::POST, "/v1/devices/sim-1/control", Scope::Operate),
            (
                Method::DELETE,
                "/v1/devices/sim-1/control/c1",
                Scope::Operate,
            ),
            (
                Method::POST,
                "/v1/devices/sim-1/control/c1/actions",
                Scope::Operate,
            ),
            (Method::POST, "/v1/scripts/x/run", Scope::Operate),
            (Method::POST, "/v1/flow-runs", Scope::Operate),
            (Method::POST, "/v1/flow-runs/x/cancel", Scope::Operate),
            (Method::GET, "/v1/flow-runs/x/report", Scope::Read),
            (Method::POST, "/mcp", Scope::Operate),
            (Method::GET, "/mcp", Scope::Operate),
            (Method::DELETE, "/v1/tasks/x", Scope::Admin),
            (Method::POST, "/v1/devices", Scope::Admin),
            (Method::DELETE, "/v1/devices/sim-1", Scope::Admin),
            (Method::POST, "/v1/scripts", Scope::Admin),
            (Method::PUT, "/v1/scripts/x", Scope::Admin),
            (Method::POST, "/v1/scripts/import", Scope::Admin),
            (Method::POST, "/v1/workspaces", Scope::Admin),
            (Method::POST, "/v1/workspaces/x/versions", Scope::Admin),
            (Method::DELETE, "/v1/workspaces/x", Scope::Admin),
            (Method::GET, "/v1/workspaces/x/versions/1/zip", Scope::Read),
            (Method::POST, "/v1/something/new", Scope::Admin),
        ];
        for (m, p, want) in cases {
            assert_eq!(required(&m, p), want, "{m} {p}");
        }
    }

    #[test]
    fn by_names_the_token_first() {
        let ci = Caller {
            scope: Scope::Operate,
            name: Some("ci".into()),
        };
        assert_eq!(Caller::by(Some(&ci), None).as_deref(), Some("ci"));
        assert_eq!(
            Caller::by(Some(&ci), Some("alice".into())).as_deref(),
            Some("ci (alice)")
        );
        assert_eq!(
            Caller::by(None, Some("alice".into())).as_deref(),
            Some("alice")
        );
    }
}
