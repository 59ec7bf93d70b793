//! A real node behind the real HTTP server with `/mcp` mounted, driven by the MCP SDK's own client
//! over streamable HTTP, the way an agent host would.

use std::collections::HashMap;
use std::ops::Deref;

use axum::http::{HeaderName, HeaderValue};
use hindsight_node::NodeConfig;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ClientConfig>;

const TOOLS: [&str; 10] = [
    "memory_feedback",
    "memory_forget",
    "memory_get",
    "memory_list_banks",
    "memory_reflect",
    "memory_resolve_conflict",
    "memory_review",
    "memory_search",
    "memory_trace",
    "memory_write",
];

/// The shared real-server harness with `/mcp` mounted on its HTTP server.
struct Harness(hindsight_testkit::Harness);

impl Deref for Harness {
    type Target = hindsight_testkit::Harness;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Harness {
    async fn start() -> Harness {
        Self::start_with(|_| {}).await
    }

    async fn start_with(adjust: impl FnOnce(&mut NodeConfig)) -> Harness {
        Harness(
            hindsight_testkit::Harness::start_with_routes(adjust, |node, http| {
                hindsight_mcp::http_router(
                    node.clone(),
                    hindsight_mcp::HttpOptions::for_bind_addr(http),
                )
            })
            .await,
        )
    }

    /// An MCP client whose requests default to `bank`.
    async fn client(&self, bank: Option<&str>) -> Client {
        self.client_with_key(bank, None).await
    }

    /// An MCP client whose requests default to `bank` and send `key`.
    async fn client_with_key(&self, bank: Option<&str>, key: Option<&str>) -> Client {
        let mut headers = HashMap::new();
        if let Some(bank) = bank {
            headers.insert(
                HeaderName::from_static(hindsight_mcp::BANK_HEADER),
                HeaderValue::from_str(bank).unwrap(),
            );
        }
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", self.http))
                .custom_headers(headers);
        if let Some(key) = key {
            config = config.auth_header(key);
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        ClientConfig::default()
            .serve(transport)
            .await
            .expect("MCP client connects")
    }

    async fn stop(self) {
        self.0.stop().await;
    }
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} answered with a protocol error: {e}"))
}

/// The structured result of a call that must have succeeded.
async fn ok(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert_ne!(
        result.is_error,
        Some(true),
        "{tool} failed: {}",
        text(&result)
    );
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    let from_text: Value = serde_json::from_str(&text(&result)).expect("text content is JSON");
    assert_eq!(structured, from_text, "text and structured content agree");
    structured
}

/// The message of a call that must have failed as a tool error.
async fn refused(client: &Client, tool: &'static str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} succeeded: {}",
        text(&result)
    );
    text(&result)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ten_tools_serve_over_streamable_http() {
    let h = Harness::start().await;
    let client = h.client(Some("mcp/agent")).await;

    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| {
            let description = t.description.clone().unwrap_or_default();
            assert!(
                description.contains("Call"),
                "{} says when to call it",
                t.name
            );
            assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
            t.name.to_string()
        })
        .collect();
    names.sort();
    assert_eq!(names, TOOLS);

    let written = ok(
        &client,
        "memory_write",
        json!({
            "content": "The user prefers invoices sent as PDF by email",
            "subtype": "preference",
            "source": "user",
            "tags": ["billing"],
        }),
    )
    .await;
    assert_eq!(written["disposition"], json!("created"));
    let id = written["id"].as_str().expect("an id").to_string();

    let found = ok(
        &client,
        "memory_search",
        json!({"query": "how does the user want invoices sent", "intent": "preferences"}),
    )
    .await;
    let hits = found["hits"].as_array().unwrap();
    assert!(
        hits.iter().any(|h| h["memory"]["id"] == json!(id)
            && h["memory"]["bank"] == json!("mcp/agent")
            && h["memory"]["content"].as_str().unwrap().contains("PDF")),
        "the written memory is found: {found}"
    );
    let recall_id = found["recall_id"].as_str().unwrap().to_string();
    assert!(!recall_id.is_empty(), "{found}");

    let got = ok(&client, "memory_get", json!({"id": id})).await;
    assert_eq!(got["id"], json!(id));
    assert_eq!(got["source"], json!("user"));

    let fed = ok(
        &client,
        "memory_feedback",
        json!({"recall_id": recall_id, "memory_id": id, "outcome": "helpful"}),
    )
    .await;
    assert_eq!(fed["applied"], json!(true), "{fed}");
    assert!(
        fed["confidence_after"].as_f64() > fed["confidence_before"].as_f64(),
        "{fed}"
    );

    let banks = ok(&client, "memory_list_banks", json!({})).await;
    assert!(
        banks["banks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["name"] == json!("mcp/agent") && b["memory_count"].as_u64() >= Some(1)),
        "{banks}"
    );

    let before = ok(
        &client,
        "memory_search",
        json!({"query": "how does the user want invoices sent", "as_of": "2020-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(before["hits"], json!([]), "{before}");
    let malformed_time = refused(
        &client,
        "memory_search",
        json!({"query": "invoices", "as_of": "yesterday"}),
    )
    .await;
    assert!(malformed_time.contains("as_of"), "{malformed_time}");

    let traced = ok(&client, "memory_trace", json!({"id": id})).await;
    assert_eq!(traced["memory"]["source"], json!("user"));
    assert!(!traced["history"].as_array().unwrap().is_empty());

    let reviewed = ok(&client, "memory_review", json!({})).await;
    assert_eq!(reviewed["bank"], json!("mcp/agent"));

    // Bad calls come back as tool errors the agent can read, and the session goes on.
    let empty = refused(&client, "memory_write", json!({"content": ""})).await;
    assert!(empty.starts_with("invalid argument"), "{empty}");
    let unknown = refused(
        &client,
        "memory_trace",
        json!({"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}),
    )
    .await;
    assert!(unknown.starts_with("not found"), "{unknown}");
    let malformed = refused(&client, "memory_forget", json!({"id": "not-an-id"})).await;
    assert!(malformed.starts_with("invalid argument"), "{malformed}");
    let wrong_type = refused(&client, "memory_search", json!({"query": 42})).await;
    assert!(!wrong_type.is_empty());
    let bad_enum = refused(
        &client,
        "memory_resolve_conflict",
        json!({"conflict_id": 1, "outcome": "keep_c"}),
    )
    .await;
    assert!(!bad_enum.is_empty());
    let no_conflict = refused(
        &client,
        "memory_resolve_conflict",
        json!({"conflict_id": 999, "outcome": "keep_a"}),
    )
    .await;
    assert!(no_conflict.starts_with("not found"), "{no_conflict}");

    let forgotten = ok(
        &client,
        "memory_forget",
        json!({"id": id, "reason": "the user asked to forget it"}),
    )
    .await;
    assert_eq!(forgotten["forgotten"], json!("archived"));
    let after = ok(&client, "memory_search", json!({"query": "invoices PDF"})).await;
    assert!(
        after["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["memory"]["id"] != json!(id)),
        "a forgotten memory is not found again: {after}"
    );

    let reflected = ok(
        &client,
        "memory_reflect",
        json!({
            "goal": "send the March invoice",
            "steps": ["looked up the customer", "sent the invoice as a PDF"],
            "outcome": "succeeded",
            "feedback": "Always attach the PDF, never a link.",
            "dry_run": true,
        }),
    )
    .await;
    assert!(reflected["memories"].is_array());

    client.cancel().await.unwrap();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bank_comes_from_the_arguments_when_no_header_names_one() {
    let h = Harness::start().await;
    let client = h.client(None).await;

    let missing = refused(&client, "memory_write", json!({"content": "x"})).await;
    assert!(missing.contains("bank"), "{missing}");

    ok(
        &client,
        "memory_write",
        json!({"bank": "mcp/other", "content": "The staging database is Postgres 16", "source": "user"}),
    )
    .await;
    let found = ok(
        &client,
        "memory_search",
        json!({"banks": ["mcp/other"], "query": "which Postgres version runs staging"}),
    )
    .await;
    assert_eq!(found["hits"][0]["memory"]["bank"], json!("mcp/other"));

    client.cancel().await.unwrap();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_speaks_for_the_key_in_its_authorization_header() {
    const ADMIN_KEY: &str = "hs_root_0123456789abcdef0123";
    // A variable of this test's own: other tests run alongside in this process.
    std::env::set_var("HINDSIGHT_TEST_ADMIN_KEY_MCP", ADMIN_KEY);
    let h = Harness::start_with(|c| {
        c.auth.enabled = true;
        c.auth.admin_key_env = "HINDSIGHT_TEST_ADMIN_KEY_MCP".into();
    })
    .await;
    let admin = hindsight_api::HindsightClient::connect(&h.grpc.to_string())
        .await
        .unwrap()
        .with_api_key(Some(ADMIN_KEY))
        .unwrap();
    let grants = vec!["tenant-a/**=write".parse().unwrap()];
    let (key_a, _) = admin.create_api_key("agent-a", &grants).await.unwrap();

    let anonymous = h.client(Some("tenant-a/x")).await;
    let message = refused(
        &anonymous,
        "memory_write",
        json!({"content": "Tenant A ships on Mondays", "source": "user"}),
    )
    .await;
    assert!(message.starts_with("unauthenticated"), "{message}");

    let a = h.client_with_key(Some("tenant-a/x"), Some(&key_a)).await;
    ok(
        &a,
        "memory_write",
        json!({"content": "Tenant A ships on Mondays", "source": "user"}),
    )
    .await;
    let found = ok(
        &a,
        "memory_search",
        json!({"query": "when does tenant A ship"}),
    )
    .await;
    assert_eq!(found["hits"].as_array().unwrap().len(), 1);
    h.node
        .create_bank("tenant-b/y".parse().unwrap(), Default::default())
        .await
        .unwrap();
    let banks = ok(&a, "memory_list_banks", json!({})).await;
    assert_eq!(
        banks["banks"],
        json!([{"name": "tenant-a/x", "memory_count": 1}]),
        "a key lists only the banks it may read"
    );
    let message = refused(
        &a,
        "memory_write",
        json!({"bank": "tenant-b/y", "content": "Tenant B ships on Fridays", "source": "user"}),
    )
    .await;
    assert!(message.starts_with("permission denied"), "{message}");

    anonymous.cancel().await.unwrap();
    a.cancel().await.unwrap();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_the_review_leaves_is_shown_and_settled_through_the_tools() {
    use hindsight_core::strategy::{Strategies, TemporalStrategy};

    let h = Harness::start().await;
    // A bank that sends changed facts to a person instead of superseding them.
    let patch = hindsight_node::BankPatch {
        strategies: Some(Strategies {
            temporal: TemporalStrategy::PendingReview,
            ..Strategies::default()
        }),
        ..Default::default()
    };
    h.node
        .create_bank("mcp/careful".parse().unwrap(), patch)
        .await
        .unwrap();
    let client = h.client(Some("mcp/careful")).await;
    let old = ok(
        &client,
        "memory_write",
        json!({"content": "My usual coffee is a flat white.", "source": "user",
               "occurred_at": "2026-03-01T09:00:00Z"}),
    )
    .await;
    let new = ok(
        &client,
        "memory_write",
        json!({"content": "Actually, I switched my coffee to an oat latte.", "source": "user",
               "occurred_at": "2026-03-05T09:00:00Z"}),
    )
    .await;

    let reviewed = ok(&client, "memory_review", json!({})).await;
    assert_eq!(reviewed["open_conflicts"], json!(1), "{reviewed}");
    let conflict = &reviewed["conflicts"][0];
    let sides: Vec<&Value> = vec![&conflict["a"]["id"], &conflict["b"]["id"]];
    assert!(
        sides.contains(&&old["id"]) && sides.contains(&&new["id"]),
        "{conflict}"
    );
    assert!(conflict["a"]["content"]
        .as_str()
        .unwrap()
        .contains("coffee"));
    assert_eq!(conflict["new"], json!(true));

    let keep = if conflict["a"]["id"] == new["id"] {
        "keep_a"
    } else {
        "keep_b"
    };
    let resolved = ok(
        &client,
        "memory_resolve_conflict",
        json!({"conflict_id": conflict["conflict_id"], "outcome": keep,
               "note": "the user confirmed the switch"}),
    )
    .await;
    assert_eq!(resolved["outcome"], json!(keep));
    assert!(!resolved["changed"].as_array().unwrap().is_empty());
    let again = refused(
        &client,
        "memory_resolve_conflict",
        json!({"conflict_id": conflict["conflict_id"], "outcome": keep}),
    )
    .await;
    assert!(!again.is_empty());
    let after = ok(&client, "memory_review", json!({})).await;
    assert_eq!(after["open_conflicts"], json!(0), "{after}");

    client.cancel().await.unwrap();
    h.stop().await;
}
