//! The web console: static files compiled into the binary, so running it needs no build step.
//! The page holds no data itself; everything it shows comes from the JSON API with the caller's key.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../console/index.html");
const CONSOLE_JS: &str = include_str!("../console/console.js");
const CONSOLE_CSS: &str = include_str!("../console/console.css");

/// The console shows memory contents, some of which the guard holds precisely because they are
/// attacks; the page only loads its own assets and talks only to this node, so injected markup
/// could neither run nor send anything elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// `/console` and its assets.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/console", get(index))
        .route("/console/", get(index))
        .route("/console/console.js", get(script))
        .route("/console/console.css", get(style))
}

// Assets change with the binary, and a browser holding an old script against a newer API shows
// wrong data, so they are revalidated on every load.
const NO_CACHE: (header::HeaderName, &str) = (header::CACHE_CONTROL, "no-cache");
const NO_SNIFF: (header::HeaderName, &str) = (header::X_CONTENT_TYPE_OPTIONS, "nosniff");

async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_FRAME_OPTIONS, "DENY"),
            NO_CACHE,
            NO_SNIFF,
        ],
        INDEX_HTML,
    )
}

async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            NO_CACHE,
            NO_SNIFF,
        ],
        CONSOLE_JS,
    )
}

async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            NO_CACHE,
            NO_SNIFF,
        ],
        CONSOLE_CSS,
    )
}
