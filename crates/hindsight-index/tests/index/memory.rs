//! The heap bytes the indexes report, part by part, against what they asked the allocator for.
//!
//! Each check runs in a process of its own (this binary again, with one test), so that no other
//! test's allocations land in its count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicI64, Ordering};

use hindsight_index::{Bm25Index, EntityIndex, TimeIndex, VectorConfig, VectorIndex};

use crate::common::unit_vectors;

/// The system allocator, counting the bytes it has handed out and not yet taken back.
struct Counting;

static HELD: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HELD.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ALONE: &str = "HINDSIGHT_INDEX_MEMORY_TEST_ALONE";

/// True in the process that runs `test` alone; elsewhere runs that process, checks that it
/// passed, and returns false.
fn alone(test: &str) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    let name = format!("memory::{test}");
    let status = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, "1")
        .status()
        .expect("the test binary runs again");
    assert!(status.success(), "{name} failed in its own process");
    false
}

fn held() -> i64 {
    HELD.load(Ordering::Relaxed)
}

/// `reported` is within `tolerance` (a fraction) of `allocated`.
fn assert_close(part: &str, reported: u64, allocated: i64, tolerance: f64) {
    let error = (reported as f64 - allocated as f64).abs() / allocated as f64;
    println!("{part}: reported {reported} bytes, allocated {allocated} bytes");
    assert!(
        error <= tolerance,
        "{part}: reported {reported} bytes, but {allocated} were allocated ({:.1} % off)",
        100.0 * error
    );
}

#[test]
fn vectors_codes_links_and_graph_report_what_they_allocated() {
    if !alone("vectors_codes_links_and_graph_report_what_they_allocated") {
        return;
    }
    let dim = 128;
    let vectors = unit_vectors(31, 6_000, dim);
    let items: Vec<(u128, Vec<f32>)> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| (i as u128, v))
        .collect();

    // Below the exact threshold: vectors and codes only.
    let mut cfg = VectorConfig::new(dim);
    cfg.exact_threshold = usize::MAX;
    let before = held();
    let flat_only = VectorIndex::new(cfg);
    flat_only.insert_batch(&items).unwrap();
    let allocated = held() - before;
    let memory = flat_only.memory();
    assert_eq!((memory.links, memory.graph), (0, 0));
    assert_close(
        "vectors and codes",
        memory.vectors + memory.codes,
        allocated,
        0.02,
    );
    drop(flat_only);

    // With a graph over every vector, linked one write at a time as a bank's are.
    let mut cfg = VectorConfig::new(dim);
    cfg.ef_construction = 64;
    cfg.exact_threshold = 0;
    cfg.background_rebuild = false;
    let before = held();
    let graphed = VectorIndex::new(cfg);
    for chunk in items.chunks(50) {
        graphed.insert_batch(chunk).unwrap();
    }
    graphed.wait_for_rebuild();
    let allocated = held() - before;
    let memory = graphed.memory();
    assert!(memory.links > 0 && memory.graph > 0, "{memory:?}");
    assert_close("every vector part", memory.total(), allocated, 0.15);
}

#[test]
fn keyword_entity_and_time_indexes_report_what_they_allocated() {
    if !alone("keyword_entity_and_time_indexes_report_what_they_allocated") {
        return;
    }
    let docs: Vec<(u128, Vec<String>, Vec<String>)> = (0..20_000u128)
        .map(|id| {
            let terms = (0..12)
                .map(|j| format!("term{}", (id * 7 + j * 13) % 3_000))
                .collect();
            let entities = (0..3)
                .map(|j| format!("entity {}", (id + j * 101) % 800))
                .collect();
            (id, terms, entities)
        })
        .collect();

    let before = held();
    let keyword = Bm25Index::new();
    for (id, terms, _) in &docs {
        keyword.upsert(*id, terms);
    }
    assert_close("keyword", keyword.heap_bytes(), held() - before, 0.10);

    let before = held();
    let entity = EntityIndex::new();
    for (id, _, entities) in &docs {
        entity.upsert(*id, entities);
    }
    assert_close("entity", entity.heap_bytes(), held() - before, 0.10);

    let before = held();
    let time = TimeIndex::new();
    for (id, _, _) in &docs {
        time.upsert(*id, 1_700_000_000_000 + (*id as i64) * 1_000);
    }
    assert_close("time", time.heap_bytes(), held() - before, 0.15);
}
