//! Supervision: a bank slow to load does not hold up the others.

use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hindsight_node::{EmbeddingProvider, Node};

use crate::harness::http_request::read_json_request;
use crate::harness::{config, recall_ids, write};

/// An OpenAI-compatible embedding endpoint. Requests of `held_from` texts or more wait while
/// the gate is shut, and are counted as they arrive; smaller ones (a recall's query) are
/// answered at once.
fn gated_embedder(held_from: usize) -> (String, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let open = Arc::new(AtomicBool::new(true));
    let held = Arc::new(AtomicUsize::new(0));
    let (gate, arrived) = (open.clone(), held.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (gate, arrived) = (gate.clone(), arrived.clone());
            std::thread::spawn(move || answer(stream, held_from, &gate, &arrived));
        }
    });
    (format!("http://{addr}"), open, held)
}

fn answer(stream: std::net::TcpStream, held_from: usize, open: &AtomicBool, held: &AtomicUsize) {
    let request = read_json_request(&stream);
    let texts: Vec<String> = request["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    if texts.len() >= held_from {
        held.fetch_add(1, Ordering::SeqCst);
        while !open.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let data: Vec<serde_json::Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut vector = vec![0.01f32; 16];
            for word in text.split_whitespace() {
                let slot = word.bytes().fold(7usize, |h, b| h * 31 + b as usize) % 16;
                vector[slot] += 1.0;
            }
            serde_json::json!({ "index": i, "embedding": vector })
        })
        .collect();
    let reply = serde_json::json!({ "data": data }).to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{reply}",
        reply.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bank_slow_to_load_does_not_hold_up_the_others() {
    let (url, open, held) = gated_embedder(10);
    std::env::set_var("HINDSIGHT_TEST_SUPERVISION_EMBEDDER_KEY", "unused");
    let dir = tempfile::tempdir().unwrap();
    let node_config = || {
        let mut c = config(dir.path());
        c.embedding.provider = EmbeddingProvider::Openai;
        c.embedding.openai_base_url = url.clone();
        c.embedding.openai_api_key_env = "HINDSIGHT_TEST_SUPERVISION_EMBEDDER_KEY".into();
        c.embedding.cache_entries = 0;
        c
    };
    {
        let node = Node::start(node_config()).await.unwrap();
        let slow = (0..20)
            .map(|i| {
                write(
                    "slow/a",
                    &format!("memory {i} of the slow bank about the harbour"),
                )
            })
            .collect();
        node.write_batch(slow).await.unwrap();
        let fast = (0..5)
            .map(|i| {
                write(
                    "fast/b",
                    &format!("memory {i} of the fast bank about the orchard"),
                )
            })
            .collect();
        node.write_batch(fast).await.unwrap();
        node.shutdown().await;
    }
    // Without its index dump the slow bank re-embeds its 20 memories as it loads, in one
    // request that the endpoint holds.
    std::fs::remove_dir_all(dir.path().join("index").join("slow%2Fa")).unwrap();
    open.store(false, Ordering::SeqCst);
    held.store(0, Ordering::SeqCst);
    let node = Node::start(node_config()).await.unwrap();
    let slow = tokio::spawn({
        let node = node.clone();
        async move { recall_ids(&node, &["slow/a"], "harbour", None).await }
    });
    tokio::time::timeout(Duration::from_secs(10), async {
        while held.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the slow bank's load reaches the embedder");

    let fast = tokio::time::timeout(
        Duration::from_secs(10),
        recall_ids(&node, &["fast/b"], "orchard", None),
    )
    .await
    .expect("another bank starts and answers while the slow one loads");
    assert_eq!(fast.len(), 5);
    assert!(fast.iter().all(|c| c.contains("fast bank")));
    assert!(!slow.is_finished(), "the slow bank is still loading");

    open.store(true, Ordering::SeqCst);
    let slow = tokio::time::timeout(Duration::from_secs(30), slow)
        .await
        .expect("the slow bank answers once it has loaded")
        .unwrap();
    assert_eq!(slow.len(), 10);
    assert!(slow.iter().all(|c| c.contains("slow bank")));
    node.shutdown().await;
}
