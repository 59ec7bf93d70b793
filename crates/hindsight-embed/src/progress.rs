//! Progress of the model download, which takes long enough on a first start that a silent node
//! looks hung: one line redrawn in place on a terminal, a few log lines anywhere else.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Redraws per second on a terminal: smooth enough to look alive, rare enough to cost nothing.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// Log lines at these fractions of the total when stderr is not a terminal.
const LOG_STEPS: u64 = 4;

/// `12.3 / 31.7 MB (38 %), 4.1 MB/s`; without a known total, `12.3 MB, 4.1 MB/s`.
pub(crate) fn progress_text(done: u64, total: Option<u64>, elapsed: Duration) -> String {
    let rate = mb_per_sec(done, elapsed);
    match total.filter(|&t| t > 0) {
        Some(total) => format!(
            "{} / {} MB ({} %), {rate:.1} MB/s",
            mb(done),
            mb(total),
            (done.min(total) * 100 / total)
        ),
        None => format!("{} MB, {rate:.1} MB/s", mb(done)),
    }
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

fn mb_per_sec(bytes: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        0.0
    } else {
        bytes as f64 / 1e6 / secs
    }
}

enum Output {
    /// The line is redrawn with a carriage return; `drawn` is when it last was.
    Terminal { drawn: Instant },
    /// Quarters of the total already logged.
    Log { logged_steps: u64 },
}

/// Reports the bytes of one download as they arrive.
pub(crate) struct Progress {
    what: String,
    total: Option<u64>,
    started: Instant,
    done: u64,
    output: Output,
}

impl Progress {
    pub(crate) fn start(what: impl Into<String>, total: Option<u64>) -> Progress {
        Progress::start_on(what, total, std::io::stderr().is_terminal())
    }

    fn start_on(what: impl Into<String>, total: Option<u64>, terminal: bool) -> Progress {
        let started = Instant::now();
        let progress = Progress {
            what: what.into(),
            total,
            started,
            done: 0,
            output: if terminal {
                Output::Terminal { drawn: started }
            } else {
                Output::Log { logged_steps: 0 }
            },
        };
        if terminal {
            progress.draw(started);
        } else {
            match total {
                Some(total) => tracing::info!("downloading {}: {} MB", progress.what, mb(total)),
                None => tracing::info!("downloading {} (size not announced)", progress.what),
            }
        }
        progress
    }

    pub(crate) fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        let now = Instant::now();
        match &mut self.output {
            Output::Terminal { drawn } => {
                if now.duration_since(*drawn) >= REDRAW_EVERY {
                    *drawn = now;
                    self.draw(now);
                }
            }
            Output::Log { logged_steps } => {
                let Some(total) = self.total.filter(|&t| t > 0) else {
                    return;
                };
                let step = self.done.min(total) * LOG_STEPS / total;
                // The last quarter is the finish line, logged once by `finish`.
                if step > *logged_steps && step < LOG_STEPS {
                    *logged_steps = step;
                    tracing::info!(
                        "downloading {}: {}",
                        self.what,
                        progress_text(self.done, self.total, now - self.started)
                    );
                }
            }
        }
    }

    /// Ends the line on a terminal, or logs the size and time.
    pub(crate) fn finish(self) {
        let now = Instant::now();
        match self.output {
            Output::Terminal { .. } => {
                self.draw(now);
                let _ = writeln!(std::io::stderr());
            }
            Output::Log { .. } => {
                let elapsed = now - self.started;
                tracing::info!(
                    "downloaded {}: {} MB in {:.1} s ({:.1} MB/s)",
                    self.what,
                    mb(self.done),
                    elapsed.as_secs_f64(),
                    mb_per_sec(self.done, elapsed)
                );
            }
        }
    }

    /// Ends the line on a terminal when the download stops short, so the error starts on a line
    /// of its own.
    pub(crate) fn abandon(self) {
        if let Output::Terminal { .. } = self.output {
            let _ = writeln!(std::io::stderr());
        }
    }

    fn draw(&self, now: Instant) {
        let text = progress_text(self.done, self.total, now - self.started);
        let mut err = std::io::stderr().lock();
        // `\x1b[K` clears what a longer earlier line left at the end.
        let _ = write!(err, "\rdownloading {}: {text}\x1b[K", self.what);
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_shows_bytes_total_percent_and_rate() {
        let secs = Duration::from_secs;
        assert_eq!(
            progress_text(12_300_000, Some(31_700_000), secs(3)),
            "12.3 / 31.7 MB (38 %), 4.1 MB/s"
        );
        assert_eq!(
            progress_text(0, Some(31_700_000), Duration::ZERO),
            "0.0 / 31.7 MB (0 %), 0.0 MB/s"
        );
        assert_eq!(
            progress_text(31_700_000, Some(31_700_000), secs(10)),
            "31.7 / 31.7 MB (100 %), 3.2 MB/s"
        );
        assert_eq!(progress_text(5_000_000, None, secs(2)), "5.0 MB, 2.5 MB/s");
        // A server that sends more than it announced never shows more than 100 %.
        assert_eq!(
            progress_text(40_000_000, Some(31_700_000), secs(4)),
            "40.0 / 31.7 MB (100 %), 10.0 MB/s"
        );
        assert_eq!(progress_text(1, Some(0), secs(1)), "0.0 MB, 0.0 MB/s");
    }

    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn without_a_terminal_it_logs_the_start_each_quarter_and_the_end() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let mut progress = Progress::start_on("model.whl", Some(1_000_000), false);
            for _ in 0..100 {
                progress.advance(10_000);
            }
            progress.finish();
        });
        let text = String::from_utf8(captured.0.lock().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[0].ends_with("downloading model.whl: 1.0 MB"),
            "{text}"
        );
        for (line, percent) in lines[1..4].iter().zip(["25 %", "50 %", "75 %"]) {
            assert!(line.contains(percent), "{text}");
        }
        assert!(
            lines[4].contains("downloaded model.whl: 1.0 MB in "),
            "{text}"
        );
    }
}
