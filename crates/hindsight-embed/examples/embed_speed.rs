//! Embedding speed of the USE-multilingual-v3 port on 1,000 short sentences.
//!
//! `cargo run --release -p hindsight-embed --example embed_speed`
//! Model files come from `HINDSIGHT_MODEL_DIR` (default
//! `~/.cache/hindsight/models`) and are fetched there if missing.

use std::path::PathBuf;
use std::time::Instant;

use hindsight_embed::{ensure_use_m3, Embedder, UseM3Embedder};

fn sentences(n: usize) -> Vec<String> {
    let people = [
        "Alice", "Bob", "Carol", "张伟", "李娜", "Priya", "王芳", "Tom",
    ];
    let english = [
        "{p} moved to a new flat near the river last month.",
        "{p} prefers green tea over coffee in the morning.",
        "Remind {p} about the dentist appointment on Thursday.",
        "What did {p} say about the budget for the next quarter?",
        "{p} is allergic to peanuts.",
        "The meeting with {p} was moved to 3 pm.",
    ];
    let chinese = [
        "{p}上个月搬到了河边的新公寓。",
        "{p}早上更喜欢喝绿茶。",
        "提醒{p}周四去看牙医。",
        "{p}对下个季度的预算说了什么？",
    ];
    (0..n)
        .map(|i| {
            let p = people[i % people.len()];
            let template = if i % 3 == 2 {
                chinese[(i / 3) % chinese.len()]
            } else {
                english[i % english.len()]
            };
            format!("{} ({i})", template.replace("{p}", p))
        })
        .collect()
}

/// Nanoseconds this thread has spent on a CPU (Linux), so that numbers stay
/// meaningful when other processes compete for the cores.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Runs `f` and prints wall-clock and on-CPU milliseconds per sentence.
fn measure(label: &str, sentences: usize, f: impl FnOnce()) {
    let cpu_before = thread_cpu_ns();
    let started = Instant::now();
    f();
    let wall = started.elapsed().as_secs_f64() * 1000.0 / sentences as f64;
    match (cpu_before, thread_cpu_ns()) {
        (Some(a), Some(b)) => {
            let cpu = (b - a) as f64 / 1e6 / sentences as f64;
            println!("{label:<22} {wall:.3} ms/sentence wall, {cpu:.3} ms/sentence on CPU");
        }
        _ => println!("{label:<22} {wall:.3} ms/sentence wall"),
    }
}

fn main() {
    let cache = std::env::var_os("HINDSIGHT_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is not set"))
                .join(".cache/hindsight/models")
        });
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let dir = ensure_use_m3(&cache).expect("model files");
    let started = Instant::now();
    let model = UseM3Embedder::load(&dir).expect("load model");
    println!("load: {} ms", started.elapsed().as_millis());

    let texts = sentences(1000);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = refs.iter().map(|t| model.token_ids(t).len()).sum();
    println!(
        "{} sentences, {:.1} tokens each on average (with markers)",
        refs.len(),
        tokens as f64 / refs.len() as f64
    );

    measure("tokenize only:", refs.len(), || {
        for t in &refs {
            std::hint::black_box(model.tokenizer().encode(t));
        }
    });

    // Warm up caches and page in the weights.
    model.embed(&refs[..50]).unwrap();

    measure("single, 1 thread:", refs.len(), || {
        for t in &refs {
            model.embed(&[t]).unwrap();
        }
    });
    measure("batched, 1 thread:", refs.len(), || {
        model.embed(&refs).unwrap();
    });

    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads > 1 {
        // On-CPU time covers only the calling thread here, so wall time is
        // the number that matters.
        let model = model.with_threads(threads);
        let started = Instant::now();
        model.embed(&refs).unwrap();
        let wall = started.elapsed().as_secs_f64() * 1000.0 / refs.len() as f64;
        println!("batched, {threads} threads:    {wall:.3} ms/sentence wall");
    }
}
