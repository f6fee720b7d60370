//! The dashboard's files: `GET /` (the page) and `GET /assets/{file}` (its ES modules and
//! stylesheet), embedded in the binary from the committed `dashboard/` directory, so a fresh
//! `droidpilot serve` has the page offline and `cargo build` needs no Node.js. The page
//! holds no data, so these routes are public; everything the page fetches carries the
//! bearer token. Each file is served with an ETag (its SHA-256) and `Cache-Control:
//! no-cache`, so a browser revalidates cheaply (304) and never runs a stale module after
//! an upgrade, plus a strict Content-Security-Policy (no inline script, same origin only).

use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::ApiError;

/// One embedded file.
struct Asset {
    /// The name under `/assets/` (`index.html` is served at `/`).
    name: &'static str,
    media_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $media:expr) => {
        Asset {
            name: $name,
            media_type: $media,
            body: include_bytes!(concat!("../dashboard/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page. A new file in `dashboard/` needs a row here (the
/// `every_dashboard_file_is_served` test checks the directory against this table).
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("main.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("devices.js", JS),
    asset!("tasks.js", JS),
    asset!("task.js", JS),
    asset!("takeover.js", JS),
    asset!("replay.js", JS),
    asset!("overlay.js", JS),
    asset!("panel.js", JS),
    asset!("phone.js", JS),
    asset!("inspector.js", JS),
    asset!("scripts.js", JS),
    asset!("flowruns.js", JS),
    asset!("workspaces.js", JS),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The page's Content-Security-Policy: its own origin only (WebSocket included), images
/// also from `blob:` (screenshots are fetched with the token and shown as blob URLs), no
/// inline script or style, never framed.
const CSP: &str = "default-src 'self'; img-src 'self' blob:; connect-src 'self'; \
                   script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

/// The file names `ASSETS` serves, for the test that compares them with the directory.
pub fn asset_names() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.name)
}

/// The quoted ETag of each asset, computed once.
fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| format!("\"{}\"", &hex::encode(Sha256::digest(a.body))[..32]))
            .collect()
    })
}

/// `GET /`: the page.
pub async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /assets/{file}`: one of the page's files.
pub async fn asset(
    axum::extract::Path(file): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    serve(&file, &headers)
}

fn serve(name: &str, req: &HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.name == name) else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("the dashboard has no file `{name}`"),
            "Open the dashboard at `/`; it loads its own files.",
        )
        .into_response();
    };
    let (a, etag) = (&ASSETS[i], &etags()[i]);
    let fresh = req
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, a.media_type)], a.body).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    for (name, value) in [
        (header::CACHE_CONTROL, "no-cache"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    resp
}

/// `GET /favicon.ico`: the icon, for browsers that ask for it by that name.
pub async fn favicon(headers: HeaderMap) -> Response {
    serve("favicon.svg", &headers)
}

/// Whether a path is one of the dashboard's public files (the auth middleware asks).
pub fn is_dashboard_path(path: &str) -> bool {
    path == "/" || path == "/favicon.ico" || path.starts_with("/assets/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dashboard_file_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboard");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("dashboard/ exists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut served: Vec<String> = asset_names().map(str::to_string).collect();
        served.sort();
        assert_eq!(on_disk, served, "dashboard/ and ASSETS differ");
    }

    #[test]
    fn a_matching_etag_gets_304_and_another_gets_the_file() {
        let tag = etags()[1].clone();
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(&tag).unwrap());
        assert_eq!(serve("style.css", &h).status(), StatusCode::NOT_MODIFIED);
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"old\""));
        let r = serve("style.css", &h);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::ETAG], tag.as_str());
    }

    #[test]
    fn unknown_files_and_paths_outside_the_table_are_404() {
        for name in ["nope.js", "../Cargo.toml", ""] {
            assert_eq!(
                serve(name, &HeaderMap::new()).status(),
                StatusCode::NOT_FOUND
            );
        }
    }
}
