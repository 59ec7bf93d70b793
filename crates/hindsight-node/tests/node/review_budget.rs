//! Review budgets: a model-judged review stays within its bank and node token budgets.

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hindsight_node::judging::JudgeKind;
use hindsight_node::{Node, NodeConfig};

use crate::harness::http_request::read_json_request;
use crate::harness::{bank, config, ts, write};

/// An OpenAI-compatible endpoint that calls every pair it is asked about unrelated and reports
/// no usage, so the client counts the tokens itself.
fn scripted_model() -> (String, Arc<AtomicUsize>) {
    scripted(false)
}

/// With `malformed`, every answer echoes a pair instead of giving verdicts, as a small
/// model does, so every batch is asked again until the client gives up.
fn scripted(malformed: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            let request = read_json_request(&stream);
            let prompt = request["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string();
            let verdicts: Vec<serde_json::Value> = prompt
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|item| item["id"].as_str().map(str::to_string))
                .map(|id| {
                    serde_json::json!({"id": id, "relation": "unrelated",
                        "newer_or_fact": null, "reason": "different drinks"})
                })
                .collect();
            let answer = if malformed {
                serde_json::json!({"a": {"text": "I drink tea", "time": "2024-01-01"}}).to_string()
            } else {
                serde_json::json!({"verdicts": verdicts}).to_string()
            };
            let reply = serde_json::json!({
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": answer}}]
            })
            .to_string();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            )
            .unwrap();
        }
    });
    (format!("http://{addr}/v1"), requests)
}

/// A node whose review asks the model at `url`, each bank's cycle within `bank_budget` tokens.
fn model_judged(dir: &Path, url: String, bank_budget: u64) -> NodeConfig {
    let mut config = config(dir);
    config.review.judge = JudgeKind::Llm;
    config.review.llm.chat.base_url = url;
    config.review.llm.chat.api_key_env = None;
    config.review.llm.chat.max_output_tokens = 200;
    config.review.llm.bank_budget_tokens = bank_budget;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_asks_after_bad_answers_stay_within_the_budget_and_lose_no_pair() {
    let (url, requests) = scripted(true);
    let budget = 2_500;
    let dir = tempfile::tempdir().unwrap();
    let mut config = model_judged(dir.path(), url, budget);
    config.review.llm.chat.max_retries = 3;
    let node = Node::start(config).await.unwrap();
    for (i, drink) in [
        "a flat white",
        "an espresso",
        "a cortado",
        "a latte",
        "a mocha",
        "a lungo",
    ]
    .iter()
    .enumerate()
    {
        let mut request = write("a/bad", &format!("My usual coffee is {drink}."));
        request.occurred_at = Some(ts(&format!("2026-03-{:02}T09:00:00Z", i + 1)));
        node.write(request).await.unwrap();
    }
    for cycle in 0..2 {
        let report = node.review(bank("a/bad"), None).await.unwrap().cycle;
        assert!(
            report.tokens_used <= budget,
            "cycle {cycle} spent {} of {budget}",
            report.tokens_used
        );
        assert!(report.tokens_used > 0);
        assert_eq!(report.pairs_judged, 0);
        assert_eq!(
            report.pairs_deferred, report.pairs_considered,
            "every pair without a verdict waits for the next cycle"
        );
    }
    assert!(requests.load(Ordering::SeqCst) >= 2);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_banks_reviewed_at_once_spend_no_more_than_the_node_budget() {
    let (url, requests) = scripted_model();
    let node_budget = 4_000;
    let dir = tempfile::tempdir().unwrap();
    let mut config = model_judged(dir.path(), url, 2_500);
    config.review.llm.node_budget_tokens = node_budget;
    let node = Node::start(config).await.unwrap();
    let banks: Vec<String> = (0..20).map(|i| format!("a/fleet-{i}")).collect();
    for name in &banks {
        let drinks = ["a ristretto", "an espresso", "a cortado", "a mocha"];
        let requests = drinks
            .iter()
            .enumerate()
            .map(|(i, drink)| {
                let mut request = write(name, &format!("My usual coffee is {drink}."));
                request.occurred_at = Some(ts(&format!("2026-03-{:02}T09:00:00Z", i + 1)));
                request
            })
            .collect();
        node.write_batch(requests).await.unwrap();
    }
    // Every bank's cycle starts before any has finished, as scheduled cycles do on a busy node.
    let cycles =
        futures::future::join_all(banks.iter().map(|name| node.review(bank(name), None))).await;
    let mut spent = 0;
    let mut deferred = 0;
    for cycle in cycles {
        let cycle = cycle.unwrap().cycle;
        spent += cycle.tokens_used;
        deferred += cycle.pairs_deferred;
    }
    assert!(
        spent <= node_budget,
        "20 cycles at once spent {spent} tokens of a node budget of {node_budget}"
    );
    assert!(spent > 0 && requests.load(Ordering::SeqCst) > 0);
    // 20 banks of 6 pairs cost far more than the budget: the rest waits, none is lost.
    assert!(deferred > 0, "the budget left pairs for later cycles");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cycle_spends_more_than_its_budget_and_the_rest_is_judged_later() {
    let (url, requests) = scripted_model();
    let budget = 2_500;
    let dir = tempfile::tempdir().unwrap();
    let config = model_judged(dir.path(), url, budget);
    let node = Node::start(config).await.unwrap();
    let drinks = [
        "a flat white",
        "an espresso",
        "a cortado",
        "a latte",
        "a mocha",
        "a macchiato",
        "an americano",
        "a cappuccino",
        "a ristretto",
        "a lungo",
    ];
    for (i, drink) in drinks.iter().enumerate() {
        let mut request = write("a/llm", &format!("My usual coffee is {drink}."));
        request.occurred_at = Some(ts(&format!("2026-03-{:02}T09:00:00Z", i + 1)));
        node.write(request).await.unwrap();
    }

    let mut judged = 0;
    let mut cycles = 0;
    loop {
        let report = node.review(bank("a/llm"), None).await.unwrap().cycle;
        cycles += 1;
        assert!(
            report.tokens_used <= budget,
            "cycle {cycles} spent {} of {budget}",
            report.tokens_used
        );
        assert_eq!(report.token_budget, budget);
        assert!(report.judge.starts_with("llm:"), "{}", report.judge);
        judged += report.pairs_judged;
        if report.pairs_deferred == 0 {
            break;
        }
        assert!(report.pairs_judged > 0, "every cycle makes progress");
        assert!(cycles < 30, "the deferred pairs are never finished");
    }
    // Ten memories stating one slot: every one of the 45 pairs is judged exactly once.
    assert_eq!(judged, 45);
    assert!(cycles > 1, "the budget forced the work over several cycles");
    assert!(requests.load(Ordering::SeqCst) >= cycles);
    node.shutdown().await;
}
