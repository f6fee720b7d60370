//! The page and its files: public (no token), with the security headers, revalidated by
//! ETag; everything they load is embedded, nothing is fetched from elsewhere.

use crate::{TOKEN, spawn};

#[tokio::test]
async fn the_page_is_public_and_its_data_is_not() {
    let app = spawn().await;
    let page = app.get("/").await;
    assert_eq!(page.status(), 200);
    let h = page.headers().clone();
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/assets/main.js">"#));
    assert!(!html.contains("<script>"), "no inline script");
    // No file the page loads is fetched from another origin.
    assert!(!html.contains("http://") && !html.contains("https://"));

    // The data behind it needs the token.
    assert_eq!(app.get("/v1/devices").await.status(), 401);
    let ok = app
        .client
        .get(app.url("/v1/devices"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn assets_have_their_types_and_revalidate_with_etags() {
    let app = spawn().await;
    let js = app.get("/assets/main.js").await;
    assert_eq!(js.status(), 200);
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(js.headers()["cache-control"], "no-cache");
    let etag = js.headers()["etag"].to_str().unwrap().to_string();
    assert!(js.text().await.unwrap().contains("import"));

    let again = app
        .client
        .get(app.url("/assets/main.js"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());

    let css = app.get("/assets/style.css").await;
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    assert_ne!(css.headers()["etag"].to_str().unwrap(), etag);

    let (status, code, message, _) =
        crate::common::error_of(app.get("/assets/missing.js").await).await;
    assert_eq!((status, code.as_str()), (404, "not_found"));
    assert!(message.contains("missing.js"), "{message}");
}
