//! Errors of the text format: lexical (`E000x`), syntax (`E001x`) and name resolution
//! (`E01xx`). Each carries the span of the offending token or construct and converts into
//! a [`Diagnostic`] with a message, a caret label and a help line.

use crate::diag::Diagnostic;
use crate::span::Span;

/// What went wrong while lexing, parsing or resolving names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// `E0001`: a character that starts no token.
    UnexpectedChar {
        /// The character.
        ch: char,
        /// Where it is.
        span: Span,
    },
    /// `E0002`: a string or byte string without its closing `"` on the same line.
    UnterminatedString {
        /// From the opening quote to the end of the line.
        span: Span,
    },
    /// `E0003`: a `\` escape other than `\\ \" \n \t \u{X}`, or a `\u{X}` that is no character.
    InvalidEscape {
        /// Why it is invalid.
        reason: &'static str,
        /// The escape.
        span: Span,
    },
    /// `E0004`: a byte string holding something else than pairs of hex digits.
    InvalidBytes {
        /// Why it is invalid.
        reason: &'static str,
        /// The offending part.
        span: Span,
    },
    /// `E0005`: a malformed number or an integer too large for 128 bits.
    InvalidNumber {
        /// Why it is invalid.
        reason: &'static str,
        /// The literal.
        span: Span,
    },
    /// `E0006`: `@` or `%` not followed by a name character.
    EmptyName {
        /// The sigil.
        sigil: char,
        /// The sigil's position.
        span: Span,
    },
    /// `E0007`: a name longer than [`super::MAX_NAME_LEN`] bytes.
    NameTooLong {
        /// Its length in bytes.
        len: usize,
        /// The name.
        span: Span,
    },
    /// `E0008`: brackets or regions nested deeper than [`super::MAX_NESTING`].
    TooDeep {
        /// The bracket that goes one level too deep.
        span: Span,
    },
    /// `E0009`: a file larger than [`super::MAX_FILE_SIZE`].
    FileTooLarge {
        /// Its size in bytes.
        len: usize,
    },
    /// `E0010`: a token that the grammar does not allow here.
    Unexpected {
        /// What the grammar allows, e.g. "`(`" or "a type".
        expected: String,
        /// The token found, described, e.g. "`}`" or "end of file".
        found: String,
        /// The syntax of the construct being parsed.
        help: &'static str,
        /// The token.
        span: Span,
    },
    /// `E0011`: a word that is not one of the keywords allowed here.
    UnknownKeyword {
        /// What kind of word was expected ("command", "type", "op", ...).
        what: &'static str,
        /// The word.
        found: String,
        /// The words allowed here.
        allowed: &'static str,
        /// The allowed word the user most likely meant ("did you mean").
        suggestion: Option<String>,
        /// The word's span.
        span: Span,
    },
    /// `E0012`: an integer outside the range of the field it sets.
    OutOfRange {
        /// The field, e.g. "a byte count".
        what: &'static str,
        /// The allowed range, e.g. "0..=255".
        range: &'static str,
        /// The integer.
        span: Span,
    },
    /// `E0013`: an op given more or fewer result names than it produces.
    ResultCount {
        /// The op keyword.
        op: String,
        /// How many results it produces, in words: "1 result", "no result", "at most 1 result".
        expected: String,
        /// How many names were written.
        found: usize,
        /// The result names, or the op keyword when none were written.
        span: Span,
    },
    /// `E0014`: an attribute, property or option written twice.
    DuplicateAttribute {
        /// The attribute.
        name: String,
        /// The second occurrence.
        span: Span,
        /// The first occurrence.
        first: Span,
    },
    /// `E0015`: a kernel body, graph body or region whose `{` is never closed: the next
    /// item (a keyword at the start of a line) or the end of the file came first.
    Unclosed {
        /// What the brace opens ("the body of kernel `@k`", ...).
        what: String,
        /// What came instead of the `}`, described with its line ("`graph` on line 6").
        found: String,
        /// The opening `{`.
        span: Span,
        /// The token that came instead.
        at: Span,
    },
    /// `E0101`: a name that is not defined (or, for graph and kernel names, not yet).
    Undefined {
        /// What kind of entity was looked for ("kernel", "node", "value", ...).
        kind: &'static str,
        /// The name with its sigil.
        name: String,
        /// How to define it.
        help: &'static str,
        /// The closest defined name of that kind, with its sigil ("did you mean").
        suggestion: Option<String>,
        /// The reference.
        span: Span,
    },
    /// `E0101` too: a graph-local name, queue or kernel value used above the statement or
    /// op that defines it (those must be defined before use).
    DefinedLater {
        /// What kind of entity the use asks for ("node", "value", "queue", ...).
        kind: &'static str,
        /// The name with its sigil.
        name: String,
        /// The reference.
        span: Span,
        /// The later definition.
        def: Span,
        /// The 1-based line of the definition.
        line: usize,
        /// The node whose statement has the use (with its sigil), when it is a node
        /// statement: the help then writes the edge out.
        user: Option<String>,
    },
    /// `E0102`: a name defined twice in one namespace.
    Duplicate {
        /// The name with its sigil.
        name: String,
        /// The second definition.
        span: Span,
        /// The first definition.
        first: Span,
    },
    /// `E0103`: a name that refers to the wrong kind of entity.
    WrongKind {
        /// The name with its sigil.
        name: String,
        /// What is allowed here.
        expected: &'static str,
        /// What the name is.
        found: &'static str,
        /// The reference.
        span: Span,
        /// The definition of the name.
        def: Span,
    },
    /// `E0104`: a kernel value used outside the region that defines it.
    OutOfScope {
        /// The name with its sigil.
        name: String,
        /// The use.
        span: Span,
        /// The definition.
        def: Span,
    },
}

impl ParseError {
    /// The stable code (documented in docs/ir.md, "Diagnostics").
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::UnexpectedChar { .. } => "E0001",
            ParseError::UnterminatedString { .. } => "E0002",
            ParseError::InvalidEscape { .. } => "E0003",
            ParseError::InvalidBytes { .. } => "E0004",
            ParseError::InvalidNumber { .. } => "E0005",
            ParseError::EmptyName { .. } => "E0006",
            ParseError::NameTooLong { .. } => "E0007",
            ParseError::TooDeep { .. } => "E0008",
            ParseError::FileTooLarge { .. } => "E0009",
            ParseError::Unexpected { .. } => "E0010",
            ParseError::UnknownKeyword { .. } => "E0011",
            ParseError::OutOfRange { .. } => "E0012",
            ParseError::ResultCount { .. } => "E0013",
            ParseError::DuplicateAttribute { .. } => "E0014",
            ParseError::Unclosed { .. } => "E0015",
            ParseError::Undefined { .. } | ParseError::DefinedLater { .. } => "E0101",
            ParseError::Duplicate { .. } => "E0102",
            ParseError::WrongKind { .. } => "E0103",
            ParseError::OutOfScope { .. } => "E0104",
        }
    }

    /// The primary location.
    pub fn span(&self) -> Span {
        match self {
            ParseError::FileTooLarge { .. } => Span::new(0, 0),
            ParseError::UnexpectedChar { span, .. }
            | ParseError::UnterminatedString { span }
            | ParseError::InvalidEscape { span, .. }
            | ParseError::InvalidBytes { span, .. }
            | ParseError::InvalidNumber { span, .. }
            | ParseError::EmptyName { span, .. }
            | ParseError::NameTooLong { span, .. }
            | ParseError::TooDeep { span }
            | ParseError::Unexpected { span, .. }
            | ParseError::UnknownKeyword { span, .. }
            | ParseError::OutOfRange { span, .. }
            | ParseError::ResultCount { span, .. }
            | ParseError::DuplicateAttribute { span, .. }
            | ParseError::Unclosed { span, .. }
            | ParseError::Undefined { span, .. }
            | ParseError::DefinedLater { span, .. }
            | ParseError::Duplicate { span, .. }
            | ParseError::WrongKind { span, .. }
            | ParseError::OutOfScope { span, .. } => *span,
        }
    }

    /// The one-line message.
    pub fn message(&self) -> String {
        match self {
            ParseError::UnexpectedChar { ch, .. } => format!("unexpected character `{}`", ch.escape_debug()),
            ParseError::UnterminatedString { .. } => "unterminated string".to_string(),
            ParseError::InvalidEscape { reason, .. } => format!("invalid escape in string: {reason}"),
            ParseError::InvalidBytes { reason, .. } => format!("invalid byte string: {reason}"),
            ParseError::InvalidNumber { reason, .. } => format!("invalid number: {reason}"),
            ParseError::EmptyName { sigil, .. } => format!("`{sigil}` must be followed by a name"),
            ParseError::NameTooLong { len, .. } => {
                format!("name is {len} bytes long, more than the limit of {}", super::MAX_NAME_LEN)
            }
            ParseError::TooDeep { .. } => {
                format!("brackets and regions nested deeper than the limit of {}", super::MAX_NESTING)
            }
            ParseError::FileTooLarge { len } => {
                format!("file is {len} bytes long, more than the limit of {} bytes", super::MAX_FILE_SIZE)
            }
            ParseError::Unexpected { expected, found, .. } => format!("expected {expected}, found {found}"),
            ParseError::UnknownKeyword { what, found, .. } => format!("unknown {what} `{found}`"),
            ParseError::OutOfRange { what, range, .. } => format!("{what} must be in {range}"),
            ParseError::ResultCount { op, expected, found, .. } => {
                let names = if *found == 1 { "name is" } else { "names are" };
                format!("`{op}` produces {expected}, but {found} result {names} written")
            }
            ParseError::DuplicateAttribute { name, .. } => format!("`{name}` is written twice"),
            ParseError::Unclosed { what, found, .. } => {
                format!("missing `}}`: {what} is still open at {found}")
            }
            ParseError::Undefined { kind, name, .. } => format!("undefined {kind} `{name}`"),
            ParseError::DefinedLater { name, line, .. } => format!("`{name}` is defined later, on line {line}"),
            ParseError::Duplicate { name, .. } => format!("`{name}` is defined twice"),
            ParseError::WrongKind { name, expected, found, .. } => {
                format!("`{name}` is {found}, but {expected} is expected here")
            }
            ParseError::OutOfScope { name, .. } => format!("value `{name}` is not visible here"),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            ParseError::UnexpectedChar { .. } => "not part of any token",
            ParseError::UnterminatedString { .. } => "no closing `\"` before the end of the line",
            ParseError::InvalidEscape { .. } => "this escape",
            ParseError::InvalidBytes { .. } => "here",
            ParseError::InvalidNumber { .. } => "this literal",
            ParseError::EmptyName { .. } => "empty name",
            ParseError::NameTooLong { .. } => "this name",
            ParseError::TooDeep { .. } => "one level too deep",
            ParseError::FileTooLarge { .. } => "",
            // Zero width: the parser pointed at the end of the line where something is missing.
            ParseError::Unexpected { span, found, .. } if span.start == span.end && found != "end of file" => {
                "expected here"
            }
            ParseError::Unexpected { .. } => "unexpected here",
            ParseError::UnknownKeyword { .. } => "not known here",
            ParseError::OutOfRange { .. } => "out of range",
            ParseError::ResultCount { .. } => "wrong number of results",
            ParseError::DuplicateAttribute { .. } => "written again here",
            ParseError::Unclosed { .. } => "this `{` is never closed",
            ParseError::Undefined { .. } => "not defined",
            ParseError::DefinedLater { .. } => "used before its definition",
            ParseError::Duplicate { .. } => "defined again here",
            ParseError::WrongKind { .. } => "wrong kind of name",
            ParseError::OutOfScope { .. } => "used outside its region",
        }
    }

    fn help(&self) -> String {
        match self {
            ParseError::UnexpectedChar { ch: '-', .. } => {
                "`-` only starts a negative number (`-1`, `-0.5`, `-inf`) or an arrow `->`".to_string()
            }
            ParseError::UnexpectedChar { .. } => {
                "remove it; comments start with `//`, names with `@` or `%`".to_string()
            }
            ParseError::UnterminatedString { .. } => {
                "close the string with `\"` on the same line; write a newline as `\\n`".to_string()
            }
            ParseError::InvalidEscape { .. } => {
                "the escapes are `\\\\`, `\\\"`, `\\n`, `\\t` and `\\u{XXXX}` (a Unicode scalar value)".to_string()
            }
            ParseError::InvalidBytes { .. } => {
                "write bytes as pairs of hex digits, optionally separated by spaces: `x\"0a0b ff\"`".to_string()
            }
            ParseError::InvalidNumber { .. } => {
                "integers are `42`, `-7` or `0x2a`; floats are `1.5`, `1e-3`, `inf`, `-inf` or `nan`".to_string()
            }
            ParseError::EmptyName { .. } => "names are made of `A-Z a-z 0-9 _ . $ -`, e.g. `@main`, `%k0`".to_string(),
            ParseError::NameTooLong { .. } => "use a shorter name".to_string(),
            ParseError::TooDeep { .. } => {
                "flatten the nesting, e.g. move inner loops into separate kernels".to_string()
            }
            ParseError::FileTooLarge { .. } => "split the module into several files".to_string(),
            ParseError::Unexpected { help, .. } => (*help).to_string(),
            ParseError::UnknownKeyword { allowed, suggestion: Some(s), .. } => {
                format!("did you mean `{s}`? expected one of: {allowed}")
            }
            ParseError::UnknownKeyword { allowed, .. } => format!("expected one of: {allowed}"),
            ParseError::OutOfRange { .. } => "write a value in the allowed range".to_string(),
            ParseError::ResultCount { op, .. } => {
                format!("write as many result names before `=` as `{op}` produces")
            }
            ParseError::DuplicateAttribute { .. } => "remove the repetition".to_string(),
            ParseError::Unclosed { what, found, .. } if found == "end of file" => {
                format!("add the `}}` that ends {what} at the end of the file")
            }
            ParseError::Unclosed { what, found, .. } => format!("add the `}}` that ends {what} before {found}"),
            ParseError::Undefined { help, suggestion: Some(s), .. } => format!("did you mean `{s}`? {help}"),
            ParseError::Undefined { help, .. } => (*help).to_string(),
            ParseError::DefinedLater { kind: "node", name, user: Some(user), .. } => format!(
                "a node must be defined before it is used: move the statement defining `{name}` above this one, \
                 or drop it here and write `edge {name} -> {user}` below both statements"
            ),
            ParseError::DefinedLater { kind: "node", name, .. } => {
                format!("a node must be defined before it is used: move this statement below the one defining `{name}`")
            }
            ParseError::DefinedLater { kind: "value", name, .. } => format!(
                "a value must be defined before it is used: move the op defining `{name}` above this one, \
                 or use a value defined earlier"
            ),
            ParseError::DefinedLater { kind: "queue", name, .. } => {
                format!("move `queue {name} ...` above the first statement that runs on it")
            }
            ParseError::DefinedLater { name, .. } => format!(
                "graph-local names must be defined before they are used: move the statement defining `{name}` \
                 above this one, or use a name defined earlier"
            ),
            ParseError::Duplicate { .. } => "rename one of the two definitions".to_string(),
            ParseError::WrongKind { expected, .. } => format!("name {expected} here"),
            ParseError::OutOfScope { .. } => {
                "a value defined inside a `for`, `loop` or `if` region is visible only in that region; \
                 pass it out with `yield`"
                    .to_string()
            }
        }
    }

    /// The diagnostic to show for this error.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d =
            Diagnostic::error(self.code(), self.message(), self.span()).with_label(self.label()).with_help(self.help());
        match self {
            ParseError::DuplicateAttribute { first, .. } | ParseError::Duplicate { first, .. } => {
                d = d.with_secondary(*first, "first defined here");
            }
            ParseError::WrongKind { def, .. } | ParseError::OutOfScope { def, .. } => {
                d = d.with_secondary(*def, "defined here");
            }
            ParseError::Unclosed { at, found, .. } => {
                let label = if found == "end of file" { "the file ends here" } else { "the next item starts here" };
                d = d.with_secondary(*at, label);
            }
            ParseError::DefinedLater { def, .. } => {
                d = d.with_secondary(*def, "defined here, later");
            }
            _ => {}
        }
        d
    }
}

impl From<ParseError> for Diagnostic {
    fn from(error: ParseError) -> Diagnostic {
        error.to_diagnostic()
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error[{}]: {}", self.code(), self.message())
    }
}

impl std::error::Error for ParseError {}
