//! Where graph builds run: a thread pool of their own, at a lower CPU priority than the threads
//! that serve requests.
//!
//! A bank crossing the exact-scan threshold, a rebuild after many removals, or a dumped graph
//! catching up links tens of thousands of vectors at once, on every core through hnsw_rs's
//! rayon-parallel inserts. On rayon's global pool at the serving threads' priority, that starved
//! recalls: in the cluster bench's recall phase right after 72,000 batched writes into 4 banks,
//! three quarters of the nodes' CPU went to those builds and only 15.7 % of recalls finished
//! within 10 ms. Searches stay correct meanwhile (slots not yet linked are scanned exactly), so a
//! build can wait for the CPU; a request should not wait for a build.
//!
//! Only the work done without the index's write lock goes here. The last few links of a build,
//! made under that lock, stay on the scheduling thread at normal priority: a starved build
//! holding the lock would hold up every search of the bank with it.

use std::sync::OnceLock;

/// How much lower than the serving threads a build runs: `nice` 10 gets about a tenth of the CPU
/// a `nice` 0 thread gets when both want it, and all of an idle one.
const BUILD_NICENESS: i32 = 10;

/// Runs `work` on the build pool, at the builds' priority, for other work that no request waits
/// for and that may take seconds of CPU: a review cycle's planning over a backlog of changes.
/// The caller waits for it. Such work must not hold a lock a request needs for long, since it may
/// be descheduled while holding it.
pub fn run_in_background<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    run_build(work)
}

/// Runs `work` on the build pool, so that it and every rayon-parallel step inside it run at the
/// builds' priority; the caller waits for it. Without the pool (the system would not start its threads) the work
/// still runs, on the global pool.
pub(crate) fn run_build<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("hindsight-index-build-{i}"))
            .start_handler(|_| lower_priority_of_this_thread())
            .build()
            .ok()
    })
    .as_ref()
}

/// On Linux a thread's nice value is its own: `setpriority` on its thread id changes that thread
/// alone. Failing to lower it is harmless (the build only competes harder), so it is not reported.
#[cfg(target_os = "linux")]
fn lower_priority_of_this_thread() {
    // SAFETY: gettid has no preconditions; setpriority only reads its arguments.
    unsafe {
        let tid = libc::gettid();
        let current = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        if current < BUILD_NICENESS {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BUILD_NICENESS);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority_of_this_thread() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn niceness_of_this_thread() -> i32 {
        // SAFETY: as above.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn builds_run_below_the_priority_of_the_caller_and_leave_the_caller_alone() {
        let caller = niceness_of_this_thread();
        let in_pool: Vec<i32> = run_build(|| {
            use rayon::prelude::*;
            (0..64)
                .into_par_iter()
                .map(|_| niceness_of_this_thread())
                .collect()
        });
        assert!(
            in_pool.iter().all(|&n| n >= BUILD_NICENESS),
            "every build thread runs at nice {BUILD_NICENESS} or lower priority: {in_pool:?}"
        );
        assert_eq!(
            niceness_of_this_thread(),
            caller,
            "the caller keeps its priority"
        );
    }
}
