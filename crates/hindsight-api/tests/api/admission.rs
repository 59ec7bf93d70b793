//! Load shedding: a node writing its `max_pending_writes` refuses more at once, over gRPC and
//! HTTP, and stores nothing of what it refused.

use std::time::Duration;

use hindsight_core::{RecallRequest, WriteRequest};
use hindsight_node::EmbeddingProvider;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tonic::Code;

use crate::support::{bank, http_get, http_post_json, write_request, Harness};

/// An OpenAI-compatible embedding server whose answers wait while its gate is shut: a write
/// embedding through it stays pending on the node until the test opens the gate.
struct GatedEmbedder {
    url: String,
    gate: watch::Sender<bool>,
    arrived: mpsc::UnboundedReceiver<usize>,
}

impl GatedEmbedder {
    async fn start() -> GatedEmbedder {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (gate, opened) = watch::channel(true);
        let (arrive, arrived) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(answer(stream, opened.clone(), arrive.clone()));
            }
        });
        GatedEmbedder { url, gate, arrived }
    }
}

async fn answer(
    mut stream: TcpStream,
    mut opened: watch::Receiver<bool>,
    arrive: mpsc::UnboundedSender<usize>,
) {
    let mut raw = vec![];
    let mut chunk = [0u8; 4096];
    let body = loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the request ended early");
        raw.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&raw).to_string();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().unwrap())
            })
            .unwrap_or(0);
        if body.len() >= length {
            break body.to_string();
        }
    };
    let request: serde_json::Value = serde_json::from_str(&body).unwrap();
    let texts: Vec<String> = request["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let _ = arrive.send(texts.len());
    opened.wait_for(|open| *open).await.unwrap();
    let data: Vec<serde_json::Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut vector = vec![0.01f32; 16];
            for (j, byte) in text.bytes().enumerate() {
                vector[(j + byte as usize) % 16] += 1.0;
            }
            serde_json::json!({ "index": i, "embedding": vector })
        })
        .collect();
    let body = serde_json::json!({ "data": data }).to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_writing_its_limit_refuses_more_at_once_and_stores_nothing_of_it() {
    std::env::set_var("HINDSIGHT_TEST_GATED_EMBEDDER_KEY", "unused");
    let mut embedder = GatedEmbedder::start().await;
    let url = embedder.url.clone();
    let h = Harness::start_with(move |c| {
        c.embedding.provider = EmbeddingProvider::Openai;
        c.embedding.openai_base_url = url;
        c.embedding.openai_api_key_env = "HINDSIGHT_TEST_GATED_EMBEDDER_KEY".into();
        c.embedding.cache_entries = 0;
        c.limits.max_batch = 8;
        c.rate_limit.max_pending_writes = 8;
    })
    .await;
    h.client
        .write(write_request(
            "shed/a",
            "The first memory, written at once.",
        ))
        .await
        .expect("an idle node takes a write");
    while embedder.arrived.try_recv().is_ok() {}

    // Six memories, then two more, wait in the embedder: the node is writing its eight.
    embedder.gate.send(true).unwrap();
    embedder.gate.send(false).unwrap();
    let mut held = vec![];
    for (n, size) in [6, 2].into_iter().enumerate() {
        let batch: Vec<WriteRequest> = (0..size)
            .map(|i| write_request("shed/a", &format!("Held memory {i} of batch {n}.")))
            .collect();
        let writer = h.client.clone();
        held.push(tokio::spawn(async move { writer.write_batch(batch).await }));
        let arrived = tokio::time::timeout(Duration::from_secs(10), embedder.arrived.recv())
            .await
            .expect("the held batch reaches the embedder");
        assert_eq!(arrived, Some(size));
    }

    let refused = h
        .client
        .write(write_request("shed/a", "Refused memory over gRPC."))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(Code::ResourceExhausted), "{refused}");
    let said = refused.to_string();
    assert!(
        said.contains("this node is busy")
            && said.contains("writing 8 memories")
            && said.contains("at most 8")
            && said.contains("nothing of it was stored"),
        "{said}"
    );
    let (status, body) = http_post_json(
        h.http,
        "/v1/banks/shed%2Fa/memories",
        r#"{"content": "Refused memory over HTTP."}"#,
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("this node is busy"), "{body}");
    assert!(
        embedder.arrived.try_recv().is_err(),
        "a refused write does no work"
    );

    embedder.gate.send(true).unwrap();
    for write in held {
        write.await.unwrap().expect("a held write is written");
    }
    let (_, metrics) = http_get(h.http, "/metrics").await;
    let series = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
    };
    assert_eq!(
        series("hindsight_writes_shed_total"),
        Some(2.0),
        "{metrics}"
    );
    // The gauge is the process's: another test's node writing at this moment sets it too,
    // so it must come back to 0, not be 0 at the first look.
    let mut pending = series("hindsight_writes_pending");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pending != Some(0.0) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (_, metrics) = http_get(h.http, "/metrics").await;
        pending = metrics.lines().find_map(|l| {
            l.strip_prefix("hindsight_writes_pending ")?
                .parse::<f64>()
                .ok()
        });
    }
    assert_eq!(
        pending,
        Some(0.0),
        "the held writes' admission was released"
    );
    assert_eq!(
        h.client
            .get_bank(bank("shed/a"))
            .await
            .unwrap()
            .memory_count,
        9,
        "the refused writes stored nothing"
    );
    let hits = h
        .client
        .recall(RecallRequest::new(
            vec![bank("shed/a")],
            "Refused memory",
            20,
        ))
        .await
        .unwrap()
        .hits;
    assert!(
        hits.iter()
            .all(|hit| !hit.memory.content.starts_with("Refused memory")),
        "{hits:?}"
    );
    h.client
        .write(write_request(
            "shed/a",
            "Taken again once the node has room.",
        ))
        .await
        .expect("the node takes writes again");
    h.stop().await;
}
