//! The process's heap as the memory budget sees it: how much is live, how much the allocator
//! holds besides, and how to hand freed pages back to the system after banks are unloaded.
//!
//! The `hindsight` binary runs on jemalloc. Under glibc's allocator, unloading banks by the
//! thousand left their pages resident: small long-lived allocations made meanwhile (store cache,
//! embedding cache) sit among them, and glibc returns only whole free pages at the top of a heap
//! or between live chunks. At 100,000 banks of 20 memories, resident memory outside the loaded
//! banks came to about 1.6 GiB under glibc and 1.4 GiB under jemalloc, which keeps each size
//! class on pages of its own and returns freed extents within a second (docs/OPERATIONS.md,
//! "Many banks on one node"). A process on another allocator (this library's tests) falls back to
//! glibc's counters and `malloc_trim`.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

static ON_JEMALLOC: AtomicBool = AtomicBool::new(false);

/// Tells this library that the process's global allocator is jemalloc (`tikv-jemallocator`), so
/// that the heap is counted and trimmed through it. A binary that sets it calls this first thing.
/// (jemalloc linked but not the global allocator still counts a few allocations of its own, so
/// its figures cannot tell by themselves.)
pub fn declare_jemalloc_global() {
    ON_JEMALLOC.store(true, Ordering::Relaxed);
}

/// Bytes in live allocations and bytes the allocator holds that no allocation uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapCounts {
    pub in_use_bytes: u64,
    /// Under glibc, part of it may already be handed back to the system.
    pub free_bytes: u64,
}

/// The heap's counts, from jemalloc when the process runs on it, else from glibc.
pub fn heap_counts() -> Option<HeapCounts> {
    if let Some(counts) = jemalloc::counts() {
        return Some(counts);
    }
    glibc_counts()
}

/// Hands the pages freed since the last call back to the system, so that resident memory, which
/// the budget is measured by, falls once unloaded banks' memory is free.
pub fn release_freed_memory() {
    if jemalloc::in_use() {
        jemalloc::purge();
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only releases free pages of the heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_counts() -> Option<HeapCounts> {
    // SAFETY: mallinfo2 has no preconditions; it reads the allocator's own counters.
    let info = unsafe { libc::mallinfo2() };
    Some(HeapCounts {
        in_use_bytes: (info.uordblks + info.hblkhd) as u64,
        free_bytes: info.fordblks as u64,
    })
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_counts() -> Option<HeapCounts> {
    None
}

mod jemalloc {
    use super::*;

    /// `arena.<i>.purge` with i = MALLCTL_ARENAS_ALL: every arena.
    const PURGE_ALL: &CStr = c"arena.4096.purge";

    pub fn in_use() -> bool {
        ON_JEMALLOC.load(Ordering::Relaxed)
    }

    pub fn counts() -> Option<HeapCounts> {
        if !in_use() {
            return None;
        }
        refresh_stats()?;
        let allocated = read_usize(c"stats.allocated")? as u64;
        let resident = read_usize(c"stats.resident")? as u64;
        Some(HeapCounts {
            in_use_bytes: allocated,
            free_bytes: resident.saturating_sub(allocated),
        })
    }

    pub fn purge() {
        // SAFETY: a void control: no value is read or written.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                PURGE_ALL.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            );
        }
    }

    /// jemalloc's statistics are a snapshot taken when the epoch advances.
    fn refresh_stats() -> Option<()> {
        let mut epoch: u64 = 1;
        let mut len = std::mem::size_of::<u64>();
        // SAFETY: "epoch" reads and writes a u64; both pointers are to one with its size.
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                c"epoch".as_ptr(),
                (&mut epoch as *mut u64).cast::<c_void>(),
                &mut len,
                (&mut epoch as *mut u64).cast::<c_void>(),
                len,
            )
        };
        (status == 0).then_some(())
    }

    fn read_usize(name: &CStr) -> Option<usize> {
        let mut value: usize = 0;
        let mut len = std::mem::size_of::<usize>();
        // SAFETY: the statistics read here are size_t; the pointer is to one with its size.
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                (&mut value as *mut usize).cast::<c_void>(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        (status == 0).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_is_counted_and_trimming_keeps_what_is_live() {
        let live: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 64 * 1024]).collect();
        let before = heap_counts().expect("the heap can be counted on this platform");
        assert!(before.in_use_bytes >= 4 << 20, "{before:?}");
        release_freed_memory();
        assert!(live
            .iter()
            .enumerate()
            .all(|(i, v)| v[v.len() - 1] == i as u8));
    }
}
