//! `config/hindsight.toml` is the reference for every key: it must parse to the defaults, show
//! every key the config types have, and any section of it must stand on its own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hindsight_node::NodeConfig;

fn shipped_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/hindsight.toml")
}

#[test]
fn the_shipped_file_parses_to_the_defaults() {
    let config = NodeConfig::load(Some(&shipped_file()), Vec::new()).unwrap();
    assert_eq!(config, NodeConfig::default());
}

/// The file's keys as dotted paths: those it sets, and those it documents in a commented-out
/// `# key = value` line (the header of the file says which keys are shown that way and why). A
/// commented `# [table]` header opens a table for the commented keys that follow it.
struct FileKeys {
    set: BTreeSet<String>,
    commented: BTreeSet<String>,
}

fn file_keys(text: &str) -> FileKeys {
    let mut set = BTreeSet::new();
    let table: toml::Table = text.parse().unwrap();
    collect_set(&toml::Value::Table(table), "", &mut set);
    let mut commented = BTreeSet::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        let (is_comment, body) = match line.strip_prefix('#') {
            Some(rest) => (true, rest.trim()),
            None => (false, line),
        };
        if let Some(header) = body.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            if !header.starts_with('[') && !header.contains(' ') {
                section = header.to_string();
            }
            continue;
        }
        if !is_comment {
            continue;
        }
        let Some((key, value)) = body.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let is_key = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        if is_key && !value.trim().is_empty() {
            commented.insert(join(&section, key));
        }
    }
    FileKeys { set, commented }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn collect_set(value: &toml::Value, path: &str, keys: &mut BTreeSet<String>) {
    if let toml::Value::Table(table) = value {
        for (key, inner) in table {
            let path = join(path, key);
            collect_set(inner, &path, keys);
            keys.insert(path);
        }
    }
}

/// Key paths of the serialized defaults that the file neither sets nor documents. Below a key
/// documented only in a comment, the default's entries (a built-in map of patterns, say) are its
/// value, not keys of their own.
fn missing_keys(value: &toml::Value, path: &str, file: &FileKeys, missing: &mut Vec<String>) {
    let toml::Value::Table(table) = value else {
        return;
    };
    for (key, inner) in table {
        let path = join(path, key);
        if file.set.contains(&path) {
            missing_keys(inner, &path, file, missing);
        } else if !file.commented.contains(&path) {
            missing.push(path);
        }
    }
}

#[test]
fn the_shipped_file_shows_every_key() {
    let text = std::fs::read_to_string(shipped_file()).unwrap();
    let file = file_keys(&text);
    let defaults = toml::Value::try_from(NodeConfig::default()).unwrap();
    let mut missing = Vec::new();
    missing_keys(&defaults, "", &file, &mut missing);
    assert!(
        missing.is_empty(),
        "config/hindsight.toml lacks these keys (set to their default, or commented out when \
         absent by default): {missing:#?}"
    );
}

#[test]
fn the_comment_reader_sees_commented_keys_in_their_table() {
    let keys =
        file_keys("[a]\nx = 1\n# y = 2\n# [a.b]\n# z = [\"q\"]\n# a prose line, not = a key\n");
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(keys.set, names(&["a", "a.x"]));
    assert_eq!(keys.commented, names(&["a.y", "a.b.z"]));
}

#[test]
fn a_partial_section_keeps_the_other_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("partial.toml");
    std::fs::write(
        &path,
        "[bank_defaults.weights]\nrelevance = 0.5\nconfidence = 0.4\nfreshness = 0.1\n",
    )
    .unwrap();
    let config = NodeConfig::load(Some(&path), Vec::new()).unwrap();
    let weights = &config.bank_defaults.weights;
    assert_eq!(weights.relevance, 0.5);
    assert_eq!(weights.confidence, 0.4);
    let defaults = NodeConfig::default().bank_defaults.weights;
    assert_eq!(weights.freshness_days, defaults.freshness_days);
    assert_eq!(weights.fact_freshness_days, defaults.fact_freshness_days);
}

/// Every section, given with one key only, parses; a section whose type lacks a container-wide
/// default would name the first field it misses.
#[test]
fn every_section_parses_from_any_one_of_its_keys() {
    let defaults = toml::Value::try_from(NodeConfig::default()).unwrap();
    let mut docs = Vec::new();
    one_key_documents(&defaults, &mut Vec::new(), &mut docs);
    assert!(docs.len() > 50, "{}", docs.len());
    for (path, doc) in docs {
        let parsed: Result<NodeConfig, _> = toml::Value::Table(doc).try_into();
        if let Err(e) = parsed {
            panic!("{path} alone does not parse: {e}");
        }
    }
}

/// For each scalar key of the defaults, a document holding only that key at its default value.
fn one_key_documents(
    value: &toml::Value,
    path: &mut Vec<String>,
    out: &mut Vec<(String, toml::Table)>,
) {
    let toml::Value::Table(table) = value else {
        return;
    };
    for (key, inner) in table {
        path.push(key.clone());
        if let toml::Value::Table(_) = inner {
            one_key_documents(inner, path, out);
        } else {
            let mut doc = toml::Table::new();
            doc.insert(path.last().unwrap().clone(), inner.clone());
            for part in path.iter().rev().skip(1) {
                let mut outer = toml::Table::new();
                outer.insert(part.clone(), toml::Value::Table(doc));
                doc = outer;
            }
            out.push((path.join("."), doc));
        }
        path.pop();
    }
}

#[test]
fn the_e5_example_file_selects_a_centred_local_server() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/embedding-e5.toml");
    let config = NodeConfig::load(Some(&file), Vec::new()).unwrap();
    let embedding = &config.embedding;
    assert_eq!(
        embedding.provider,
        hindsight_node::EmbeddingProvider::Openai
    );
    assert!(embedding.openai_centre);
    assert_eq!(embedding.openai_api_key_env, "");
    assert_eq!(
        (
            embedding.openai_input_type.as_str(),
            embedding.openai_query_input_type.as_str()
        ),
        ("passage", "query")
    );
    assert!(!embedding.openai_keep_alive);
    let rest = NodeConfig::default();
    assert_eq!(config.node, rest.node, "only the embedding section is set");
}
