//! Who a tool call speaks for and which bank it defaults to: the server's configuration, overridden
//! per request by the HTTP headers of the MCP request that carried the call.

use axum::http::request::Parts;
use axum::http::HeaderMap;
use rmcp::model::Extensions;

use crate::tool_error::ToolError;

/// The header an HTTP client names its default bank in.
pub const BANK_HEADER: &str = "x-hindsight-bank";

/// The server-wide defaults: for stdio, from the command line; for HTTP, usually none, since each
/// request brings its own.
#[derive(Clone, Debug, Default)]
pub struct Defaults {
    /// Sent when the request brings no key of its own.
    pub api_key: Option<String>,
    /// Used when neither the tool's arguments nor the request name a bank.
    pub bank: Option<String>,
}

/// One tool call's key and default bank.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub api_key: Option<String>,
    pub bank: Option<String>,
}

impl Caller {
    /// The defaults, with whatever the HTTP request (when the call came over HTTP) says instead.
    pub fn of(defaults: &Defaults, extensions: &Extensions) -> Caller {
        let headers = extensions.get::<Parts>().map(|parts| &parts.headers);
        Caller {
            api_key: headers
                .and_then(bearer_token)
                .or_else(|| defaults.api_key.clone()),
            bank: headers
                .and_then(|h| header(h, BANK_HEADER))
                .or_else(|| defaults.bank.clone()),
        }
    }

    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The bank a tool acts on: the one its arguments name, else the default.
    pub fn bank(&self, given: Option<String>) -> Result<String, ToolError> {
        given
            .map(|b| b.trim().to_string())
            .filter(|b| !b.is_empty())
            .or_else(|| self.bank.clone())
            .ok_or(ToolError::NoBank)
    }

    /// The banks a search covers: those named, else the default.
    pub fn banks(&self, given: Vec<String>) -> Result<Vec<String>, ToolError> {
        let named: Vec<String> = given
            .into_iter()
            .map(|b| b.trim().to_string())
            .filter(|b| !b.is_empty())
            .collect();
        if !named.is_empty() {
            return Ok(named);
        }
        Ok(vec![self.bank(None)?])
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    (!value.is_empty()).then(|| value.to_string())
}

fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = header(headers, "authorization")?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .unwrap_or(&value)
        .trim();
    (!token.is_empty()).then(|| token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over_http(headers: &[(&str, &str)]) -> Extensions {
        let mut request = axum::http::Request::builder();
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let (parts, ()) = request.body(()).unwrap().into_parts();
        let mut extensions = Extensions::new();
        extensions.insert(parts);
        extensions
    }

    #[test]
    fn request_headers_take_precedence_over_the_defaults() {
        let defaults = Defaults {
            api_key: Some("configured".into()),
            bank: Some("configured/bank".into()),
        };
        let caller = Caller::of(
            &defaults,
            &over_http(&[("authorization", "Bearer hs_a_b"), (BANK_HEADER, "acme/x")]),
        );
        assert_eq!(caller.key(), Some("hs_a_b"));
        assert_eq!(caller.bank(None).unwrap(), "acme/x");
        assert_eq!(caller.bank(Some("given".into())).unwrap(), "given");

        let caller = Caller::of(&defaults, &over_http(&[]));
        assert_eq!(caller.key(), Some("configured"));
        assert_eq!(caller.bank(Some(" ".into())).unwrap(), "configured/bank");
    }

    #[test]
    fn no_bank_anywhere_is_the_callers_error() {
        let caller = Caller::of(&Defaults::default(), &Extensions::new());
        assert!(matches!(caller.bank(None), Err(ToolError::NoBank)));
        assert!(matches!(caller.banks(vec![]), Err(ToolError::NoBank)));
        assert_eq!(caller.banks(vec!["a".into(), "".into()]).unwrap(), ["a"]);
    }
}
