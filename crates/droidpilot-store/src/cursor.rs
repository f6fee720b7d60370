//! Page cursors, shared by the backends: opaque to clients, base64url of the last id (task
//! or script) of the page.

use std::str::FromStr;

use base64::Engine as _;

use super::StoreError;

/// The cursor that resumes after `id`.
fn encode_cursor(id: impl std::fmt::Display) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.to_string())
}

/// The id a cursor holds (a task id or a script id).
pub(crate) fn decode_cursor<T: FromStr>(c: &str) -> Result<T, StoreError> {
    let bad = || {
        StoreError::InvalidCursor(format!(
            "`{c}` is not a cursor this server issued; use `next_cursor` from the previous page"
        ))
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .map_err(|_| bad())?;
    std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)
}

/// Ends a page read with one extra row (`LIMIT limit + 1`): drops that row and returns the
/// cursor to the next page, or None when this page is the last.
pub(crate) fn next_page<T, I: std::fmt::Display>(
    items: &mut Vec<T>,
    limit: u32,
    id: impl Fn(&T) -> I,
) -> Option<String> {
    if items.len() <= limit as usize {
        return None;
    }
    items.truncate(limit as usize);
    items.last().map(|t| encode_cursor(id(t)))
}
