//! OpenAiEmbedder against a real HTTP server on a local port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;

use hindsight_embed::{EmbedError, Embedder, OpenAiConfig, OpenAiEmbedder};

struct Recorded {
    path: String,
    authorization: Option<String>,
    body: serde_json::Value,
}

/// Serves one request per canned `(status, body)` pair, answering with
/// `Connection: close`, and reports each request it received.
fn serve(answers: Vec<(u16, String)>) -> (String, mpsc::Receiver<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for (status, body) in answers {
            let (stream, _) = listener.accept().unwrap();
            let recorded = answer(stream, status, &body);
            if tx.send(recorded).is_err() {
                break;
            }
        }
    });
    (url, rx)
}

fn answer(stream: TcpStream, status: u16, body: &str) -> Recorded {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let path = request_line.split_whitespace().nth(1).unwrap().to_string();
    let mut content_length = 0;
    let mut authorization = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => content_length = value.trim().parse().unwrap(),
            "authorization" => authorization = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut raw = vec![0u8; content_length];
    reader.read_exact(&mut raw).unwrap();
    let reason = if status == 200 { "OK" } else { "Error" };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream.flush().unwrap();
    Recorded {
        path,
        authorization,
        body: serde_json::from_slice(&raw).unwrap(),
    }
}

fn config(base_url: String) -> OpenAiConfig {
    OpenAiConfig {
        base_url,
        model: "test-embed".into(),
        api_key_env: None,
        timeout_secs: 10,
        dim: None,
        batch_size: 2,
        input_type: None,
        query_input_type: None,
        keep_alive: true,
    }
}

#[test]
fn embeds_in_order_normalises_and_batches() {
    // Items come back out of order; `index` decides where they go.
    let first = r#"{"object":"list","model":"test-embed","data":[
        {"object":"embedding","index":1,"embedding":[0.0,2.0,0.0]},
        {"object":"embedding","index":0,"embedding":[3.0,0.0,4.0]}]}"#;
    let second = r#"{"data":[{"index":0,"embedding":[0.0,0.0,-5.0]}]}"#;
    let (url, requests) = serve(vec![(200, first.into()), (200, second.into())]);
    // A key read from the environment variable named in the config.
    std::env::set_var("HINDSIGHT_TEST_OPENAI_KEY", "sk-test-123");
    let embedder = OpenAiEmbedder::new(OpenAiConfig {
        api_key_env: Some("HINDSIGHT_TEST_OPENAI_KEY".into()),
        ..config(url)
    })
    .unwrap();
    assert_eq!(embedder.dim(), 0, "unknown until the first answer");
    assert_eq!(embedder.model_id(), "openai:test-embed");

    let vectors = embedder.embed(&["first", "second", "third"]).unwrap();
    assert_eq!(
        vectors,
        vec![
            vec![0.6, 0.0, 0.8],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, -1.0]
        ]
    );
    assert_eq!(embedder.dim(), 3);

    let r1 = requests.recv().unwrap();
    assert_eq!(r1.path, "/v1/embeddings");
    assert_eq!(r1.authorization.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(
        r1.body,
        serde_json::json!({"model": "test-embed", "input": ["first", "second"]})
    );
    let r2 = requests.recv().unwrap();
    assert_eq!(r2.body["input"], serde_json::json!(["third"]));
}

#[test]
fn texts_and_queries_carry_their_configured_input_types() {
    let answer = r#"{"data":[{"index":0,"embedding":[1.0,0.0]}]}"#;
    let (url, requests) = serve(vec![(200, answer.into()), (200, answer.into())]);
    let embedder = OpenAiEmbedder::new(OpenAiConfig {
        input_type: Some("passage".into()),
        query_input_type: Some("query".into()),
        ..config(url)
    })
    .unwrap();
    assert_eq!(embedder.model_id(), "openai:test-embed#passage");
    embedder.embed(&["a note to keep"]).unwrap();
    embedder.embed_queries(&["what did I note?"]).unwrap();
    let stored = requests.recv().unwrap();
    assert_eq!(
        stored.body,
        serde_json::json!({"model": "test-embed", "input": ["a note to keep"], "input_type": "passage"})
    );
    let asked = requests.recv().unwrap();
    assert_eq!(asked.body["input_type"], "query");
    assert_eq!(asked.body["input"], serde_json::json!(["what did I note?"]));
}

#[test]
fn reports_server_error_message() {
    let body =
        r#"{"error":{"message":"model 'test-embed' not found","type":"invalid_request_error"}}"#;
    let (url, requests) = serve(vec![(404, body.into()), (500, "upstream exploded".into())]);
    let embedder = OpenAiEmbedder::new(config(url)).unwrap();

    let err = embedder.embed(&["hello"]).unwrap_err();
    match &err {
        EmbedError::Api { status, message } => {
            assert_eq!(*status, 404);
            assert_eq!(message, "model 'test-embed' not found");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert!(err.to_string().contains("HTTP 404"), "{err}");
    assert!(requests.recv().unwrap().authorization.is_none());

    let err = embedder.embed(&["hello"]).unwrap_err();
    assert!(
        matches!(&err, EmbedError::Api { status: 500, message } if message == "upstream exploded"),
        "{err:?}"
    );
}

#[test]
fn rejects_dimension_changes_and_wrong_counts() {
    let (url, _requests) = serve(vec![
        (
            200,
            r#"{"data":[{"index":0,"embedding":[1.0,0.0]}]}"#.into(),
        ),
        (
            200,
            r#"{"data":[{"index":0,"embedding":[1.0,0.0,0.0]}]}"#.into(),
        ),
        (200, r#"{"data":[]}"#.into()),
    ]);
    let embedder = OpenAiEmbedder::new(OpenAiConfig {
        dim: Some(2),
        ..config(url)
    })
    .unwrap();
    assert_eq!(embedder.dim(), 2);
    assert_eq!(embedder.discover_dim().unwrap(), 2);
    embedder.embed(&["a"]).unwrap();
    let err = embedder.embed(&["b"]).unwrap_err();
    assert!(err.to_string().contains("3 dimensions"), "{err}");
    let err = embedder.embed(&["c"]).unwrap_err();
    assert!(matches!(err, EmbedError::Shape { .. }), "{err:?}");
}

#[test]
fn unreachable_server_is_a_transport_error() {
    // Bind then drop, so nothing listens on the port.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let embedder = OpenAiEmbedder::new(config(format!("http://127.0.0.1:{port}/v1"))).unwrap();
    let err = embedder.embed(&["x"]).unwrap_err();
    assert!(matches!(err, EmbedError::Transport { .. }), "{err:?}");
    assert!(embedder.embed(&[]).unwrap().is_empty());
}
