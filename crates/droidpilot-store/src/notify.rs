//! PostgreSQL's `LISTEN/NOTIFY`, as the instances of one database use it: the two
//! channels, their payloads, sending a control message, and one listening connection.
//!
//! - `droidpilot_events`: every appended event sends `{"s": stream, "q": seq, "o": origin}`
//!   in its own transaction (`PostgresStore::append_event`, or with its step in
//!   `commit_step`, one pointer per event in seq order), so a pointer is seen only once
//!   its event is committed. A payload is only a pointer: the receiver re-reads the event.
//! - `droidpilot_control`: `{"kind": "answer"|"cancel", "task", "o"}` tells the instance
//!   whose runner holds `task` that an answer was stored or a cancel requested (and
//!   `{"kind": "ping", "nonce", "o"}` is a listener's probe of its own connection).
//!
//! `origin` is a token made when the store is opened (one per process), not the
//! configured instance name, so a process always recognises its own notifications, even
//! where two hosts were misconfigured with one name. What to do with notices is
//! `run::relay`'s business; this module only speaks the protocol.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};

use super::StoreError;
use droidpilot_core::domain::TaskId;

/// The channel event pointers are sent on.
pub const EVENTS_CHANNEL: &str = "droidpilot_events";
/// The channel answers and cancels are relayed on.
pub const CONTROL_CHANNEL: &str = "droidpilot_control";

/// How long connecting the listening connection may take.
const LISTEN_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// "Event `seq` of `stream` is committed", sent by `origin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventPointer {
    #[serde(rename = "s")]
    pub stream: String,
    #[serde(rename = "q")]
    pub seq: i64,
    #[serde(rename = "o")]
    pub origin: String,
}

/// What a control message asks. Answers and cancels go to whichever instance runs
/// `task` (the others have no runner for it and ignore them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Control {
    /// The task's open question has a stored answer: wake the runner waiting on it.
    Answer { task: TaskId },
    /// The task's cancel is stored: signal its runner now.
    Cancel { task: TaskId },
    /// A listener's liveness probe to itself, told apart by `nonce`.
    Ping { nonce: u64 },
}

/// A control message and who sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlMsg {
    #[serde(flatten)]
    pub control: Control,
    #[serde(rename = "o")]
    pub origin: String,
}

/// One notification, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Event(EventPointer),
    Control(ControlMsg),
}

impl Notice {
    /// The notice on `channel`, or None for a payload this version does not understand
    /// (a newer instance's; it is logged and skipped, never fatal).
    pub fn parse(channel: &str, payload: &str) -> Option<Notice> {
        match channel {
            EVENTS_CHANNEL => serde_json::from_str(payload).ok().map(Notice::Event),
            CONTROL_CHANNEL => serde_json::from_str(payload).ok().map(Notice::Control),
            _ => None,
        }
    }

    /// Who sent it.
    pub fn origin(&self) -> &str {
        match self {
            Notice::Event(p) => &p.origin,
            Notice::Control(c) => &c.origin,
        }
    }
}

/// The handle a PostgreSQL store gives out for notifications: its pool (to send) and the
/// options of a dedicated connection (to listen, outside the pool's budget).
#[derive(Debug, Clone)]
pub struct Notifier {
    pool: PgPool,
    listen: PgConnectOptions,
    origin: String,
}

impl Notifier {
    pub(super) fn new(pool: PgPool, listen: PgConnectOptions, origin: String) -> Self {
        Self {
            pool,
            listen,
            origin,
        }
    }

    /// This process's token, as its notifications carry it.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Sends a control message to every listening instance (this one too; its listener
    /// skips it).
    pub async fn send(&self, control: Control) -> Result<(), StoreError> {
        let msg = ControlMsg {
            control,
            origin: self.origin.clone(),
        };
        let payload = serde_json::to_string(&msg).expect("plain data serializes");
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CONTROL_CHANNEL)
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A new connection listening on both channels (at most `LISTEN_CONNECT_TIMEOUT`).
    pub async fn listen(&self) -> Result<Listening, StoreError> {
        let connect = async {
            // A pool of one of its own: the listener never takes a connection the store's
            // queries need, and `Listening` is dropped (not reconnected) when it is lost.
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(LISTEN_CONNECT_TIMEOUT)
                .connect_with(self.listen.clone())
                .await?;
            let mut l = PgListener::connect_with(&pool).await?;
            l.ignore_pool_close_event(true);
            l.eager_reconnect(false);
            l.listen_all([EVENTS_CHANNEL, CONTROL_CHANNEL]).await?;
            Ok::<_, sqlx::Error>(l)
        };
        match tokio::time::timeout(LISTEN_CONNECT_TIMEOUT, connect).await {
            Ok(l) => Ok(Listening { inner: l? }),
            Err(_) => Err(StoreError::Database(sqlx::Error::PoolTimedOut)),
        }
    }
}

/// One listening connection. Once `next` says it is lost, make a new one with
/// `Notifier::listen` (what was sent meanwhile is not delivered: re-read the store).
pub struct Listening {
    inner: PgListener,
}

impl Listening {
    /// The next notice; `Ok(None)` when the connection is lost. A payload that does not
    /// parse is skipped.
    pub async fn next(&mut self) -> Result<Option<Notice>, StoreError> {
        loop {
            let Some(n) = self.inner.try_recv().await? else {
                return Ok(None);
            };
            match Notice::parse(n.channel(), n.payload()) {
                Some(notice) => return Ok(Some(notice)),
                None => tracing::warn!(channel = n.channel(), "unreadable notification skipped"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_and_control_messages_parse_and_unknown_ones_do_not() {
        let p = Notice::parse(EVENTS_CHANNEL, r#"{"s":"t1","q":7,"o":"a"}"#).unwrap();
        assert_eq!(p.origin(), "a");
        assert!(matches!(p, Notice::Event(EventPointer { seq: 7, .. })));
        let task = TaskId::new();
        let c = format!(r#"{{"task":"{task}","kind":"cancel","o":"b"}}"#);
        assert_eq!(
            Notice::parse(CONTROL_CHANNEL, &c),
            Some(Notice::Control(ControlMsg {
                control: Control::Cancel { task },
                origin: "b".into()
            }))
        );
        let sent = ControlMsg {
            control: Control::Ping { nonce: 3 },
            origin: "a".into(),
        };
        let wire = serde_json::to_string(&sent).unwrap();
        assert_eq!(
            Notice::parse(CONTROL_CHANNEL, &wire),
            Some(Notice::Control(sent))
        );
        assert_eq!(Notice::parse(CONTROL_CHANNEL, r#"{"kind":"reboot"}"#), None);
        assert_eq!(Notice::parse("other", r#"{"s":"t1","q":7,"o":"a"}"#), None);
    }
}
