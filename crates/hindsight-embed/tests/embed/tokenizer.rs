//! The SentencePiece tokenizer against ids from the reference C++ library
//! (tests/data/tokenizer_ids.json, made by scripts/tokenizer_ids.py).

use hindsight_embed::{SentencePieceTokenizer, UseM3Embedder};

use crate::common;

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
    normalized: String,
}

#[derive(serde::Deserialize)]
struct Expected {
    cases: Vec<Case>,
}

fn expected() -> Expected {
    let path = common::data_file("tokenizer_ids.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn matches_reference_sentencepiece_ids() {
    let dir = common::model_dir();
    let tokenizer = SentencePieceTokenizer::load(&dir.join("sp.model")).unwrap();
    assert_eq!(tokenizer.vocab_size(), 128_000);
    assert_eq!(tokenizer.unk_id(), 0);
    assert_eq!(tokenizer.bos_id(), Some(1));
    assert_eq!(tokenizer.eos_id(), Some(2));

    let cases = expected().cases;
    assert!(cases.len() >= 30);
    let mut failures = Vec::new();
    for case in &cases {
        let normalized = tokenizer.normalize(&case.text);
        let ids = tokenizer.encode(&case.text);
        if normalized != case.normalized || ids != case.ids {
            failures.push(format!(
                "{:?}\n  normalized {:?} (expected {:?})\n  ids {:?}\n  expected {:?}",
                case.text, normalized, case.normalized, ids, case.ids
            ));
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

#[test]
fn english_and_chinese_examples() {
    let dir = common::model_dir();
    let tokenizer = SentencePieceTokenizer::load(&dir.join("sp.model")).unwrap();
    let pieces = |text: &str| -> Vec<String> {
        tokenizer
            .encode(text)
            .into_iter()
            .map(|id| tokenizer.piece(id).unwrap().to_string())
            .collect()
    };
    assert_eq!(pieces("Hello world"), ["▁Hello", "▁world"]);
    assert_eq!(tokenizer.encode("Hello world"), [17486, 1017]);
    assert_eq!(
        tokenizer.encode("我住在上海。"),
        expected_ids("我住在上海。")
    );
    assert_eq!(pieces("  Hello   world "), pieces("Hello world"));
    // Full-width forms normalise to ASCII before segmentation.
    assert_eq!(tokenizer.normalize("ＡＢＣ　１２３"), "▁ABC▁123");
    assert!(tokenizer.encode("").is_empty());
    assert!(tokenizer.encode(" \t ").is_empty());
}

fn expected_ids(text: &str) -> Vec<u32> {
    expected()
        .cases
        .into_iter()
        .find(|c| c.text == text)
        .map(|c| c.ids)
        .unwrap()
}

#[test]
fn encoder_input_has_markers_and_unknown_for_empty_text() {
    let model = UseM3Embedder::load(&common::model_dir()).unwrap();
    assert_eq!(model.token_ids("Hello world"), [1, 17486, 1017, 2]);
    // The reference package feeds [bos, unk, eos] for text with no pieces.
    assert_eq!(model.token_ids(""), [1, 0, 2]);
}
