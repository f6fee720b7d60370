//! The commands that talk to a running server (`flow test --server`, `workspace …`): one
//! client built one way, with the server's URL from `--server` and the bearer token from
//! `DROIDPILOT_TOKEN` (unset or empty: no token), and one reading of its answers: a 2xx
//! body, or the server's error shape (`{"error": {"message", "hint"}}`) as the error,
//! status, message and hint as the server wrote them.

use serde_json::Value;

/// The environment variable holding the bearer token.
pub const TOKEN_ENV: &str = "DROIDPILOT_TOKEN";

/// A running droidpilot server.
pub struct Remote {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

impl Remote {
    /// The server at `url` (`http://host:port`, a trailing `/` allowed), with the token
    /// from the environment.
    pub fn new(url: &str) -> Self {
        Self {
            base: url.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        }
    }

    /// The server's URL as given, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A request to `path` (`/v1/…`) with `query` (encoded here), with the token when
    /// there is one. A URL that does not parse is left to `send` to report.
    pub fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.base);
        let r = match reqwest::Url::parse(&url) {
            Ok(mut u) if !query.is_empty() => {
                u.query_pairs_mut().extend_pairs(query);
                self.http.request(method, u)
            }
            _ => self.http.request(method, url),
        };
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// `GET path`: the 2xx body as JSON.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        checked(
            self.send(self.request(reqwest::Method::GET, path, &[]))
                .await?,
        )
        .await
    }

    /// `POST path` with a JSON body: the 2xx body as JSON.
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let r = self.request(reqwest::Method::POST, path, &[]).json(body);
        checked(self.send(r).await?).await
    }

    /// Sends `r`, naming the server when it cannot be reached.
    pub async fn send(&self, r: reqwest::RequestBuilder) -> anyhow::Result<reqwest::Response> {
        r.send().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot reach the server at {}: {e}\nhint: start it with `droidpilot serve`, or pass its address with --server",
                self.base
            )
        })
    }
}

/// The body of a 2xx, or the server's error shape as the error.
pub async fn checked(resp: reqwest::Response) -> anyhow::Result<Value> {
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if status.is_success() {
        return Ok(body);
    }
    let e = &body["error"];
    anyhow::bail!(
        "{status}: {}\nhint: {}",
        e["message"]
            .as_str()
            .unwrap_or("the server refused the request"),
        e["hint"].as_str().unwrap_or("")
    )
}
