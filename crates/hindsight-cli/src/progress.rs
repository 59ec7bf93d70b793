//! A small progress line on stderr for long commands (eval, bench); silent when stderr is not a
//! terminal so logs and CI output stay clean.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub struct Progress {
    label: &'static str,
    total: u64,
    done: AtomicU64,
    started: Instant,
    enabled: bool,
}

impl Progress {
    pub fn new(label: &'static str, total: u64) -> Self {
        Progress {
            label,
            total: total.max(1),
            done: AtomicU64::new(0),
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
        }
    }

    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        let step = (self.total / 100).max(1);
        if self.enabled && (done % step < n || done == self.total) {
            self.draw(done);
        }
    }

    fn draw(&self, done: u64) {
        let width = 30;
        let filled = (done.min(self.total) * width / self.total) as usize;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{} [{}{}] {done}/{} {:.0}s",
            self.label,
            "#".repeat(filled),
            "-".repeat(width as usize - filled),
            self.total,
            self.started.elapsed().as_secs_f64()
        );
        let _ = err.flush();
    }

    pub fn finish(&self) {
        if self.enabled {
            self.draw(self.done.load(Ordering::Relaxed));
            eprintln!();
        }
    }
}
