//! Progress of long work on stderr: the phase, a fraction where there is one, and the time
//! so far, redrawn in place on one line. Shown only when stderr is a terminal (or with
//! `--progress always`) and once the work has taken about a second, so quick commands and
//! pipes stay quiet; the line is cleared when the work ends.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// When to show progress (`--progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    /// When stderr is a terminal and the work passes about a second.
    #[default]
    Auto,
    /// Always, from the start, one line per update (for logs and tests).
    Always,
    /// Never.
    Never,
}

/// Work that passes this is worth a progress line.
const QUIET_FOR: Duration = Duration::from_secs(1);
/// Least time between two redraws.
const REDRAW: Duration = Duration::from_millis(100);

/// A progress line on stderr.
pub struct Progress {
    start: Instant,
    last: Option<Instant>,
    mode: Mode,
    shown: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// Redraw one line in place (a terminal).
    Line,
    /// One line per update, no cursor movement.
    Log,
}

impl Progress {
    /// A reporter for `when`, timing from now.
    pub fn new(when: When) -> Progress {
        let mode = match when {
            When::Never => Mode::Off,
            When::Always => Mode::Log,
            When::Auto if std::io::stderr().is_terminal() => Mode::Line,
            When::Auto => Mode::Off,
        };
        Progress { start: Instant::now(), last: None, mode, shown: false }
    }

    /// The work is in `phase`, `done` of `total` steps when given.
    pub fn update(&mut self, phase: &str, fraction: Option<(usize, usize)>) {
        let now = Instant::now();
        let elapsed = now - self.start;
        match self.mode {
            Mode::Off => return,
            Mode::Line if elapsed < QUIET_FOR => return,
            Mode::Line if self.last.is_some_and(|t| now - t < REDRAW) => return,
            _ => {}
        }
        self.last = Some(now);
        let part = match fraction {
            Some((done, total)) => format!(" {done}/{total}"),
            None => String::new(),
        };
        let text = format!("cmdgraph: {phase}{part} ({:.1} s)", elapsed.as_secs_f64());
        let mut err = std::io::stderr().lock();
        let _ = match self.mode {
            Mode::Line => write!(err, "\r\x1b[2K{text}"),
            _ => writeln!(err, "{text}"),
        };
        let _ = err.flush();
        self.shown = true;
    }

    /// Clears the line (a terminal) once the work is over.
    pub fn finish(&mut self) {
        if self.shown && self.mode == Mode::Line {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
        self.shown = false;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
