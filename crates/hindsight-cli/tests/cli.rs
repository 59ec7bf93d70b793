//! The `hindsight` binary as a user runs it: a real server process, real client processes, and a
//! crash (SIGKILL) in between.

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_hindsight");
const BANK: &str = "cli/crash";

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

struct Server {
    child: Child,
    grpc: String,
}

impl Server {
    /// Starts `hindsight serve` on `data_dir` with fresh ports and waits until `/ready` answers 200.
    fn start(data_dir: &Path, log: &Path) -> Server {
        let grpc = format!("127.0.0.1:{}", free_port());
        let http = format!("127.0.0.1:{}", free_port());
        let child = Command::new(BIN)
            .args(["serve", "--data-dir"])
            .arg(data_dir)
            .args(["--grpc-addr", &grpc, "--http-addr", &http])
            .env("HINDSIGHT_EMBEDDING_PROVIDER", "hashing")
            .env("HINDSIGHT_REVIEW_INTERVAL_SECS", "0")
            .env("HINDSIGHT_REVIEW_ON_LIKELY_CONFLICT", "false")
            .env_remove("HINDSIGHT_SERVER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(log).unwrap())
            .spawn()
            .expect("hindsight serve starts");
        let mut server = Server { child, grpc };
        server.wait_ready(&http, log);
        server
    }

    fn wait_ready(&mut self, http: &str, log: &Path) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the server exited with {status} before it was ready:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            if http_status(http, "/ready") == Some(200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the server was not ready within 120 s:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }

    fn run(&self, args: &[&str]) -> Output {
        hindsight(&self.grpc, args)
    }

    /// Runs a client command that must succeed and print JSON.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let output = self.run(&args);
        assert!(
            output.status.success(),
            "hindsight {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "hindsight {args:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }

    fn kill(mut self) {
        // SIGKILL: no shutdown hook runs, as in a crash.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hindsight(server: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("HINDSIGHT_SERVER", server)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn http_status(addr: &str, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.split_whitespace().nth(1)?.parse().ok()
}

fn ids(recall: &Value) -> Vec<String> {
    recall["hits"]
        .as_array()
        .expect("hits is a list")
        .iter()
        .map(|h| h["memory"]["id"].as_str().unwrap().to_string())
        .collect()
}

const FACTS: &[&str] = &[
    "The user prefers green tea in the morning",
    "The user drinks black coffee after lunch",
    "The deploy pipeline runs every Friday at noon",
    "Alice leads Project Falcon",
    "The quarterly report is due on the first Monday of April",
    "用户喜欢喝绿茶",
    "The staging database was migrated to Postgres 16",
    "The user is allergic to peanuts",
];

fn recall_args(query: &str) -> Vec<&str> {
    vec![
        "recall",
        "--bank",
        BANK,
        "--query",
        query,
        "--top-k",
        "5",
        "--as-of",
        "2026-03-10T12:00:00Z",
    ]
}

#[test]
fn acknowledged_writes_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let server = Server::start(&data, &log);

    let mut written = Vec::new();
    for (i, fact) in FACTS.iter().enumerate() {
        let at = format!("2026-03-0{}T09:00:00Z", i + 1);
        let answer = server.json(&[
            "write",
            "--bank",
            BANK,
            "--content",
            fact,
            "--occurred-at",
            &at,
            "--tag",
            "cli",
        ]);
        assert_eq!(answer["disposition"], "created", "{answer}");
        let id = answer["id"].as_str().expect("an id").to_string();
        assert_eq!(id.len(), 26, "a ULID: {id}");
        written.push((id, fact.to_string()));
    }

    let tea = server.json(&recall_args("what tea does the user like"));
    let tea_ids = ids(&tea);
    let position = tea_ids.iter().position(|id| *id == written[0].0);
    let first = &tea["hits"][position.unwrap_or_else(|| panic!("the tea fact is found: {tea}"))];
    assert_eq!(first["memory"]["content"], FACTS[0]);
    assert_eq!(first["memory"]["bank"], BANK);
    assert_eq!(first["memory"]["kind"], "semantic");
    assert_eq!(first["status"]["name"], "active");
    assert_eq!(first["memory"]["occurred_at"], "2026-03-01T09:00:00.000Z");
    assert!(first["score"].is_number() && first["memory"]["confidence"].is_number());
    assert!(first["explain"]["arms"].is_array(), "{first}");
    let falcon_ids = ids(&server.json(&recall_args("who leads Project Falcon")));
    assert!(falcon_ids.contains(&written[3].0));

    // Errors: one line on stderr, non-zero exit, nothing on stdout.
    let refused = server.run(&["recall", "--bank", BANK, "--query", "tea", "--top-k", "0"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("top_k"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let unknown = server.run(&["get", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]);
    assert!(!unknown.status.success());
    // The server's message once, with the code's name; not the gRPC status's own rendering.
    let unknown = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        unknown.trim_end().ends_with("(not_found)") && !unknown.contains("code:"),
        "{unknown}"
    );
    assert_eq!(
        unknown.matches("01ARZ3NDEKTSV4RRFFQ69G5FAV").count(),
        1,
        "{unknown}"
    );
    // A duplicate answers with the memory that holds it, which `get` finds.
    let again = server.json(&["write", "--bank", BANK, "--content", FACTS[3]]);
    assert_eq!(again["disposition"], "merged", "{again}");
    assert_eq!(again["id"], written[3].0.as_str(), "{again}");
    assert_eq!(server.json(&["get", &written[3].0])["support"]["count"], 2);
    let bad_bank = server.run(&["write", "--bank", "Not A Bank", "--content", "x"]);
    assert!(!bad_bank.status.success());
    assert!(String::from_utf8_lossy(&bad_bank.stderr).contains("invalid bank name"));

    server.kill();
    let server = Server::start(&data, &log);
    for (id, content) in &written {
        let memory = server.json(&["get", id]);
        assert_eq!(memory["content"].as_str(), Some(content.as_str()), "{id}");
        assert_eq!(memory["id"].as_str(), Some(id.as_str()));
    }
    let bank = server.json(&["bank", "get", BANK]);
    assert_eq!(
        bank["memory_count"].as_u64(),
        Some(FACTS.len() as u64),
        "{bank}"
    );
    assert_eq!(
        ids(&server.json(&recall_args("what tea does the user like"))),
        tea_ids
    );
    assert_eq!(
        ids(&server.json(&recall_args("who leads Project Falcon"))),
        falcon_ids
    );

    // The readable forms print something for each command.
    for args in [
        vec!["status"],
        vec!["bank", "list"],
        vec!["get", written[0].0.as_str()],
        vec!["trace", written[0].0.as_str()],
        recall_args("tea"),
    ] {
        let output = server.run(&args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.stdout.is_empty(), "{args:?} printed nothing");
    }
    let table = String::from_utf8_lossy(&server.run(&recall_args("tea")).stdout).to_string();
    assert!(table.starts_with("#  SCORE"), "{table}");
    server.kill();
}

#[test]
fn a_dead_server_gets_a_clear_error() {
    let addr = format!("127.0.0.1:{}", free_port());
    for args in [
        vec!["status"],
        vec!["write", "--bank", "cli/x", "--content", "hello"],
        vec!["recall", "--bank", "cli/x", "--query", "hello", "--json"],
    ] {
        let output = hindsight(&addr, &args);
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            stderr.trim_end(),
            format!(
                "error: cannot reach the Hindsight server at {addr}: connection refused (is `hindsight serve` running?)"
            ),
            "{args:?}"
        );
    }
}

#[test]
fn review_supersedes_a_changed_preference_and_keeps_the_past_answerable() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let server = Server::start(&dir.path().join("data"), &log);
    let bank = "cli/review";
    let write = |content: &str, at: &str| -> String {
        let answer = server.json(&[
            "write",
            "--bank",
            bank,
            "--content",
            content,
            "--occurred-at",
            at,
            "--source",
            "user",
        ]);
        answer["id"].as_str().unwrap().to_string()
    };
    let old = write("My usual coffee is a flat white.", "2026-03-01T09:00:00Z");
    let new = write(
        "Actually, I switched my coffee to an oat latte.",
        "2026-03-05T09:00:00Z",
    );

    let report = server.json(&["review", "--bank", bank, "--as-of", "2026-03-06T00:00:00Z"]);
    assert!(
        report["updated"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| id == &old),
        "{report}"
    );
    assert_eq!(report["cycle"]["judge"], "rules", "{report}");

    let recall_at = |at: &str| {
        ids(&server.json(&[
            "recall",
            "--bank",
            bank,
            "--query",
            "what coffee does the user drink",
            "--as-of",
            at,
        ]))
    };
    let now = recall_at("2026-03-07T00:00:00Z");
    assert!(now.contains(&new) && !now.contains(&old), "{now:?}");
    let before = recall_at("2026-03-03T00:00:00Z");
    assert!(
        before.contains(&old) && !before.contains(&new),
        "{before:?}"
    );

    let superseded = server.json(&["get", &old]);
    assert_eq!(superseded["status"]["name"], "superseded", "{superseded}");
    assert_eq!(superseded["valid_to"], "2026-03-05T09:00:00.000Z");
    let trace = server.json(&["trace", &old]);
    let decision = trace["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["actor"] == "review:rules")
        .unwrap_or_else(|| panic!("the review's decision is in the history: {trace}"));
    assert!(
        decision["reason"].as_str().unwrap().contains(&new),
        "{decision}"
    );
    server.kill();
}

#[test]
fn the_retrieval_log_says_what_a_bank_returned_for_a_query_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let server = Server::start(&dir.path().join("data"), &log);
    let bank = "cli/log";
    for content in [
        "The user prefers green tea in the morning",
        "The deploy pipeline runs every Friday at noon",
    ] {
        server.json(&["write", "--bank", bank, "--content", content]);
    }
    let recall = server.json(&[
        "recall",
        "--bank",
        bank,
        "--query",
        "what tea does the user like",
        "--intent",
        "preferences",
    ]);
    let recall_id = recall["recall_id"]
        .as_str()
        .expect("a recall id")
        .to_string();
    let top = ids(&recall)[0].clone();
    let feedback = server.json(&["feedback", &recall_id, &top, "helpful"]);
    assert_eq!(feedback["applied"], true, "{feedback}");

    let listed = server.json(&[
        "log", "list", "--bank", bank, "--query", "tea", "--since", "1h",
    ]);
    let listed = listed["recalls"].as_array().expect("a list of recalls");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], recall_id.as_str());
    let shown = server.json(&["log", "show", &recall_id]);
    assert_eq!(shown["request"]["query"], "what tea does the user like");
    assert_eq!(shown["request"]["intent"], "preferences");
    assert_eq!(shown["hits"][0]["memory_id"], top.as_str());
    assert!(!shown["hits"][0]["explain"]["arms"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(shown["feedback"][0]["outcome"], "helpful");
    // `--since` is "at or after": since yesterday takes in today's recall.
    let since = server.json(&["log", "list", "--bank", bank, "--since", "yesterday"]);
    assert_eq!(since["recalls"].as_array().unwrap().len(), 1, "{since}");
    let none = server.run(&["log", "list", "--bank", bank, "--query", "quarterly"]);
    assert_eq!(
        String::from_utf8_lossy(&none.stdout),
        format!("no recalls match these filters (--bank {bank}, --query quarterly)\n")
    );

    let out = dir.path().join("recalls.jsonl");
    let export = server.run(&[
        "log",
        "export",
        "--bank",
        bank,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["id"], recall_id.as_str());

    let refused = server.run(&["feedback", &recall_id, &top, "great"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("used helpful wrong harmful"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// Drops what recalls change as they happen (access counts), which an export carries forward.
fn without_access(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("access");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

#[test]
fn a_bank_exported_deleted_and_imported_answers_recall_and_trace_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let server = Server::start(&dir.path().join("data"), &log);
    let bank = "cli/transfer";
    let mut ids_written = vec![];
    for (i, content) in FACTS
        .iter()
        .chain(&[
            "My usual coffee is a flat white.",
            "Actually, I switched my coffee to an oat latte.",
        ])
        .enumerate()
    {
        let at = format!("2026-03-{:02}T09:00:00Z", i + 1);
        let answer = server.json(&[
            "write",
            "--bank",
            bank,
            "--content",
            content,
            "--occurred-at",
            &at,
            "--source",
            "user",
        ]);
        ids_written.push(answer["id"].as_str().unwrap().to_string());
    }
    let report = server.json(&["review", "--bank", bank, "--as-of", "2026-03-20T00:00:00Z"]);
    assert!(
        !report["updated"].as_array().unwrap().is_empty(),
        "{report}"
    );
    let traces = |server: &Server| -> Vec<Value> {
        ids_written
            .iter()
            .map(|id| without_access(server.json(&["trace", id])))
            .collect()
    };
    let recall = |server: &Server| -> Vec<Value> {
        let answer = server.json(&[
            "recall",
            "--bank",
            bank,
            "--query",
            "what coffee does the user drink",
            "--as-of",
            "2026-03-21T00:00:00Z",
            "--include-history",
        ]);
        answer["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let m = &h["memory"];
                serde_json::json!([m["id"], m["content"], h["status"], m["confidence"]])
            })
            .collect()
    };
    let traces_before = traces(&server);
    let recall_before = recall(&server);
    assert!(recall_before.len() >= 2, "{recall_before:?}");

    let file = dir.path().join("transfer.jsonl");
    let exported = server.run(&["bank", "export", bank, "--out", file.to_str().unwrap()]);
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let lines = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        lines.lines().count(),
        1 + ids_written.len(),
        "bank line and one per memory"
    );
    server.json(&["bank", "delete", bank]);
    let gone = server.run(&["trace", &ids_written[0]]);
    assert!(
        !gone.status.success(),
        "the deleted bank's records are gone"
    );

    let imported = server.json(&["bank", "import", file.to_str().unwrap()]);
    assert_eq!(imported["memories"], ids_written.len(), "{imported}");
    assert_eq!(traces(&server), traces_before, "trace answers as before");
    assert_eq!(recall(&server), recall_before, "recall answers as before");

    // A second import of the same file would duplicate every record: refused, nothing changes.
    let again = server.run(&["bank", "import", file.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // Ids are kept, so the same records cannot go into a second bank next to the first.
    let copy = server.run(&[
        "bank",
        "import",
        file.to_str().unwrap(),
        "--bank",
        "cli/copy",
    ]);
    assert!(!copy.status.success());
    let banks = server.json(&["bank", "list"]);
    assert!(
        !banks.to_string().contains("cli/copy"),
        "a refused import creates no bank: {banks}"
    );
    server.kill();
}

/// A data directory on a tmpfs of its own, unmounted on drop, so that its disk can be filled.
struct SmallDisk {
    path: std::path::PathBuf,
}

impl SmallDisk {
    /// `None` where this process may not mount file systems (it is not root).
    fn mount(path: &Path, megabytes: u32) -> Option<SmallDisk> {
        std::fs::create_dir_all(path).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| SmallDisk {
            path: path.to_path_buf(),
        })
    }

    /// Writes a ballast file until the disk is full.
    fn fill(&self) {
        let mut ballast = File::create(self.path.join("ballast")).unwrap();
        let chunk = vec![0u8; 1 << 20];
        while ballast.write_all(&chunk).is_ok() {}
    }

    fn free(&self) {
        std::fs::remove_file(self.path.join("ballast")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

#[test]
fn a_full_disk_stops_the_node_with_its_reason_and_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let Some(disk) = SmallDisk::mount(&data, 32) else {
        eprintln!("skipped: mounting a tmpfs needs root, which this run does not have");
        return;
    };
    let mut server = Server::start(&data, &log);
    let write = |server: &Server, i: usize| {
        let content = format!("Crate {i} waits in bay {} of the north yard.", i * 7);
        server.run(&["write", "--bank", BANK, "--content", &content, "--json"])
    };
    let mut acked = Vec::new();
    for i in 0..3 {
        let output = write(&server, i);
        assert!(output.status.success(), "{output:?}");
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        acked.push(answer["id"].as_str().unwrap().to_string());
    }

    disk.fill();
    let mut refused = None;
    for i in 3..500 {
        let output = write(&server, i);
        if !output.status.success() {
            refused = Some(String::from_utf8_lossy(&output.stderr).into_owned());
            break;
        }
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        acked.push(answer["id"].as_str().unwrap().to_string());
    }
    let refused = refused.expect("a write fails once the disk is full");
    assert!(refused.starts_with("error: "), "{refused}");

    // The node does not linger refusing writes: it stops, saying why, for a supervisor to restart.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the node kept running on a failed store"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success(), "{status}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("the store stopped") && said.contains("No space left on device"),
        "{said}"
    );

    disk.free();
    let server = Server::start(&data, &log);
    for id in &acked {
        let memory = server.json(&["get", id]);
        assert_eq!(
            memory["id"].as_str(),
            Some(id.as_str()),
            "acknowledged {id}"
        );
    }
    drop(server);
    drop(disk);
}
