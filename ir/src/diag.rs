//! Diagnostics shared by the parser and the verifier, rendered with a source line and caret.
//!
//! Each module keeps its own error enum (`text::ParseError`, `verify::VerifyError`) carrying
//! spans; both convert into a [`Diagnostic`] for display. Rendering never panics: spans are
//! clamped to the source and to character boundaries first.

use crate::span::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::Ansi, termcolor::NoColor, Config};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether [`Diagnostic::render`] colours its output (ANSI escapes); off by default.
static COLOR: AtomicBool = AtomicBool::new(false);

/// Turns ANSI colour in rendered diagnostics on or off for the whole process (the CLI's
/// `--color`: on for a terminal by default). Off by default, so library users and files
/// get plain text.
pub fn set_color(on: bool) {
    COLOR.store(on, Ordering::Relaxed);
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// The input is accepted but probably wrong.
    Warning,
}

/// A located message: what is wrong, where, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A stable short code, e.g. `E0201` (documented in docs/ir.md).
    pub code: &'static str,
    /// One line saying what is wrong.
    pub message: String,
    /// The primary location.
    pub span: Span,
    /// The text under the caret.
    pub label: String,
    /// Other relevant locations.
    pub secondary: Vec<(Span, String)>,
    /// What to do about it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            help: None,
        }
    }

    /// Sets the caret label.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    /// Adds a secondary location.
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push((span, label.into()));
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// 1-based line and column of the primary span in `source`.
    pub fn line_col(&self, source: &str) -> (usize, usize) {
        line_col(source, self.span.start as usize)
    }

    /// Renders the diagnostic as `error[CODE]: message` followed by `┌─ file:line:col`, the
    /// source line with a caret, and the help. `file` is the name shown.
    pub fn render(&self, file: &str, source: &str) -> String {
        let simple = SimpleFile::new(file, source);
        let mut labels = Vec::new();
        if self.span.is_defined() {
            labels.push(Label::primary((), clamp(source, self.span)).with_message(self.label.clone()));
        }
        for (span, msg) in &self.secondary {
            if span.is_defined() {
                labels.push(Label::secondary((), clamp(source, *span)).with_message(msg.clone()));
            }
        }
        let base = match self.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        };
        let mut diagnostic = base.with_code(self.code).with_message(self.message.clone()).with_labels(labels);
        if let Some(help) = &self.help {
            diagnostic = diagnostic.with_notes(vec![format!("help: {help}")]);
        }
        let config = Config::default();
        let rendered = if COLOR.load(Ordering::Relaxed) {
            let mut out = Ansi::new(Vec::new());
            term::emit(&mut out, &config, &simple, &diagnostic).map(|()| out.into_inner())
        } else {
            let mut out = NoColor::new(Vec::new());
            term::emit(&mut out, &config, &simple, &diagnostic).map(|()| out.into_inner())
        };
        match rendered {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            // Rendering can only fail on I/O to a Vec, which cannot happen; keep a plain form.
            Err(_) => {
                let (line, col) = self.line_col(source);
                format!("error[{}]: {}\n  --> {file}:{line}:{col}\n", self.code, self.message)
            }
        }
    }
}

/// Renders many diagnostics, one after the other.
pub fn render_all(diagnostics: &[Diagnostic], file: &str, source: &str) -> String {
    diagnostics.iter().map(|d| d.render(file, source)).collect()
}

/// 1-based line and column (in characters) of byte offset `offset`.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = floor_boundary(source, offset.min(source.len()));
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn floor_boundary(source: &str, mut i: usize) -> usize {
    while i > 0 && !source.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn clamp(source: &str, span: Span) -> std::ops::Range<usize> {
    let start = floor_boundary(source, (span.start as usize).min(source.len()));
    let end = floor_boundary(source, (span.end as usize).min(source.len())).max(start);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_points_at_line_and_column() {
        let src = "graph @g {\n  %a = bogus\n}\n";
        let d = Diagnostic::error("E0001", "unknown command `bogus`", Span::new(18, 23))
            .with_label("not a command")
            .with_help("use one of kernel, memcpy, ...");
        let text = d.render("t.cgir", src);
        assert!(text.contains("t.cgir:2:8"), "{text}");
        assert!(text.contains("^^^^^"), "{text}");
        assert!(text.contains("help: use one of"), "{text}");
    }

    #[test]
    fn render_never_panics_on_out_of_range_spans() {
        let src = "héllo";
        let d = Diagnostic::error("E0001", "x", Span::new(2, 400));
        assert!(d.render("f", src).contains("f:1:2"));
        assert_eq!(line_col(src, 2), (1, 2));
    }
}
