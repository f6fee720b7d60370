//! A browser cannot set `Authorization` on a WebSocket: it offers its token as the
//! subprotocol `droidpilot.bearer.<token>` beside `droidpilot`, and gets `droidpilot` back.

use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::common::TestApp;
use crate::{TOKEN, spawn};

async fn connect(
    app: &TestApp,
    protocols: Option<&str>,
) -> Result<
    (
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        tokio_tungstenite::tungstenite::http::Response<Option<Vec<u8>>>,
    ),
    tokio_tungstenite::tungstenite::Error,
> {
    let mut req = format!("ws://{}/v1/ws", app.addr)
        .into_client_request()
        .unwrap();
    if let Some(p) = protocols {
        req.headers_mut()
            .insert("sec-websocket-protocol", HeaderValue::from_str(p).unwrap());
    }
    tokio_tungstenite::connect_async(req).await
}

fn status_of(e: tokio_tungstenite::tungstenite::Error) -> u16 {
    match e {
        tokio_tungstenite::tungstenite::Error::Http(resp) => resp.status().as_u16(),
        other => panic!("expected an HTTP refusal, got {other}"),
    }
}

#[tokio::test]
async fn the_token_as_a_subprotocol_opens_the_socket_and_droidpilot_is_echoed() {
    let app = spawn().await;
    let offered = format!("droidpilot.bearer.{TOKEN}, droidpilot");
    let (mut ws, resp) = connect(&app, Some(&offered)).await.expect("upgrade");
    assert_eq!(resp.headers()["sec-websocket-protocol"], "droidpilot");
    ws.send(Message::Text(r#"{"type":"ping"}"#.into()))
        .await
        .unwrap();
    let reply = tokio::time::timeout(std::time::Duration::from_secs(5), ws.next())
        .await
        .expect("a reply")
        .unwrap()
        .unwrap();
    assert!(reply.to_text().unwrap().contains("pong"));
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_refused_before_the_upgrade() {
    let app = spawn().await;
    let wrong = connect(&app, Some("droidpilot.bearer.nope, droidpilot"))
        .await
        .expect_err("a wrong token is refused");
    assert_eq!(status_of(wrong), 401);
    let none = connect(&app, Some("droidpilot"))
        .await
        .expect_err("no token is refused");
    assert_eq!(status_of(none), 401);
    let bare = connect(&app, None).await.expect_err("no header is refused");
    assert_eq!(status_of(bare), 401);
}

#[tokio::test]
async fn the_subprotocol_token_counts_only_on_websocket_upgrades() {
    let app = spawn().await;
    // A plain request carrying the header is not authenticated by it.
    let resp = app
        .client
        .get(app.url("/v1/devices"))
        .header(
            "sec-websocket-protocol",
            format!("droidpilot.bearer.{TOKEN}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
}
