//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0): header parsing and writing.
//!
//! A file is the magic `\x93NUMPY`, a major and minor version byte, the header length
//! (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), the header — a
//! Python dict literal `{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }` padded
//! with spaces and ending in `\n` — and then the array data. The header is parsed by a
//! small tokenizer for exactly the literals NumPy writes (strings, `True`/`False`, tuples of
//! integers), never evaluated, and every malformed header is an [`NpyError`], never a panic.
//! Interpreting `descr` against a memory object's element type is the caller's business.

use std::fmt;

/// The first six bytes of every `.npy` file.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// NumPy pads the preamble plus header to a multiple of this, so the data is aligned.
const ALIGN: usize = 64;

/// Most header bytes accepted (NumPy itself refuses headers over 10,000 bytes by default;
/// this is more generous but keeps a corrupt length from claiming gigabytes).
const MAX_HEADER: usize = 1 << 20;

/// The dict of an `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The dtype string, e.g. `<f4` or `|b1`.
    pub descr: String,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The array's shape (empty for a 0-d array, which holds one element).
    pub shape: Vec<u64>,
}

impl Header {
    /// Number of elements: the product of the shape, `None` on overflow.
    pub fn element_count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// Whether C and Fortran order lay the data out identically (at most one dimension
    /// longer than 1), so that `fortran_order` does not matter.
    pub fn order_is_irrelevant(&self) -> bool {
        self.shape.iter().filter(|&&d| d > 1).count() <= 1
    }
}

/// Why a file is not a valid `.npy` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyError(pub String);

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(message: impl Into<String>) -> Result<T, NpyError> {
    Err(NpyError(message.into()))
}

/// Whether `bytes` starts with the `.npy` magic.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Parses the preamble and header of an `.npy` file; returns the header and the data bytes
/// after it (all of them: checking their length against the dtype is the caller's job).
pub fn read(bytes: &[u8]) -> Result<(Header, &[u8]), NpyError> {
    if !has_magic(bytes) {
        return err("not a NumPy .npy file (it does not start with \\x93NUMPY)");
    }
    let (major, minor) = match bytes.get(6..8) {
        Some(&[major, minor]) => (major, minor),
        _ => return err("the .npy preamble is cut short (no version bytes)"),
    };
    let len_bytes = match major {
        1 => 2,
        2 | 3 => 4,
        _ => return err(format!("unsupported .npy format version {major}.{minor} (versions 1, 2 and 3 are read)")),
    };
    let Some(raw_len) = bytes.get(8..8 + len_bytes) else {
        return err("the .npy preamble is cut short (no header length)");
    };
    let header_len = raw_len.iter().rev().fold(0usize, |acc, &b| (acc << 8) | b as usize);
    if header_len > MAX_HEADER {
        return err(format!("the .npy header claims {header_len} bytes (at most {MAX_HEADER} are accepted)"));
    }
    let start = 8 + len_bytes;
    let Some(text) = bytes.get(start..start + header_len) else {
        return err(format!(
            "the .npy header claims {header_len} bytes but the file has only {} after the preamble",
            bytes.len() - start
        ));
    };
    let header = parse_header(text)?;
    Ok((header, &bytes[start + header_len..]))
}

/// Parses the header dict (the bytes between the length field and the data).
pub fn parse_header(text: &[u8]) -> Result<Header, NpyError> {
    let mut lexer = Lexer { text, pos: 0 };
    lexer.expect(Token::Open('{'))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        let key = match lexer.next()? {
            Token::Close('}') => break,
            Token::Str(key) => key,
            other => return err(format!("expected a key or `}}` in the .npy header, found {other}")),
        };
        lexer.expect(Token::Colon)?;
        let duplicate = match key.as_str() {
            "descr" => descr.replace(lexer.string_value(&key)?).is_some(),
            "fortran_order" => fortran.replace(lexer.bool_value(&key)?).is_some(),
            "shape" => shape.replace(lexer.shape_value()?).is_some(),
            _ => return err(format!("unknown key '{key}' in the .npy header (expected descr, fortran_order, shape)")),
        };
        if duplicate {
            return err(format!("key '{key}' appears twice in the .npy header"));
        }
        match lexer.next()? {
            Token::Comma => {}
            Token::Close('}') => break,
            other => return err(format!("expected `,` or `}}` after '{key}' in the .npy header, found {other}")),
        }
    }
    lexer.skip_space();
    if lexer.pos != text.len() {
        return err("unexpected text after the closing `}` of the .npy header");
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(Header { descr, fortran_order, shape }),
        (d, f, s) => {
            let missing: Vec<&str> = [(d.is_none(), "descr"), (f.is_none(), "fortran_order"), (s.is_none(), "shape")]
                .into_iter()
                .filter_map(|(gone, name)| gone.then_some(name))
                .collect();
            err(format!("the .npy header lacks {}", missing.join(", ")))
        }
    }
}

/// Writes a version 1.0 file in C order, padded as NumPy pads it. A shape of up to 64
/// dimensions (NumPy's limit, and the reader's) always fits version 1.0's 16-bit length.
pub fn write(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    let padded = (10 + dict.len() + 1).next_multiple_of(ALIGN) - 10;
    let mut out = Vec::with_capacity(10 + padded + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&u16::try_from(padded).unwrap_or(u16::MAX).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(10 + padded - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(data);
    out
}

/// A token of the header dict.
#[derive(Debug, PartialEq, Eq)]
enum Token {
    Open(char),
    Close(char),
    Colon,
    Comma,
    Str(String),
    Int(u64),
    Bool(bool),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Open(c) | Token::Close(c) => write!(f, "`{c}`"),
            Token::Colon => f.write_str("`:`"),
            Token::Comma => f.write_str("`,`"),
            Token::Str(s) => write!(f, "'{s}'"),
            Token::Int(n) => write!(f, "{n}"),
            Token::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
        }
    }
}

struct Lexer<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn next(&mut self) -> Result<Token, NpyError> {
        self.skip_space();
        let Some(&c) = self.text.get(self.pos) else {
            return err("the .npy header ends before its closing `}`");
        };
        self.pos += 1;
        Ok(match c {
            b'{' | b'(' | b'[' => Token::Open(c as char),
            b'}' | b')' | b']' => Token::Close(c as char),
            b':' => Token::Colon,
            b',' => Token::Comma,
            b'\'' | b'"' => Token::Str(self.string(c)?),
            b'0'..=b'9' => Token::Int(self.int(c)?),
            b'A'..=b'Z' | b'a'..=b'z' => {
                let start = self.pos - 1;
                while self.text.get(self.pos).is_some_and(u8::is_ascii_alphanumeric) {
                    self.pos += 1;
                }
                match &self.text[start..self.pos] {
                    b"True" => Token::Bool(true),
                    b"False" => Token::Bool(false),
                    word => return err(format!("unexpected `{}` in the .npy header", String::from_utf8_lossy(word))),
                }
            }
            _ => return err(format!("unexpected character `{}` in the .npy header", char::from(c).escape_debug())),
        })
    }

    /// A quoted string (the opening quote already consumed); NumPy's dtype strings never
    /// need escapes, so a backslash is refused rather than half-interpreted.
    fn string(&mut self, quote: u8) -> Result<String, NpyError> {
        let start = self.pos;
        loop {
            match self.text.get(self.pos) {
                None | Some(b'\n') => return err("unterminated string in the .npy header"),
                Some(b'\\') => return err("escape sequences in .npy header strings are not supported"),
                Some(&c) if c == quote => break,
                Some(_) => self.pos += 1,
            }
        }
        let s = std::str::from_utf8(&self.text[start..self.pos])
            .map_err(|_| NpyError("a string in the .npy header is not UTF-8".into()))?
            .to_string();
        self.pos += 1;
        Ok(s)
    }

    /// Decimal digits (the first already consumed), with the `L` suffix Python 2 wrote.
    fn int(&mut self, first: u8) -> Result<u64, NpyError> {
        let mut value = u64::from(first - b'0');
        while let Some(&c) = self.text.get(self.pos).filter(|c| c.is_ascii_digit()) {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
                .ok_or_else(|| NpyError("a dimension in the .npy header does not fit 64 bits".into()))?;
            self.pos += 1;
        }
        if self.text.get(self.pos) == Some(&b'L') {
            self.pos += 1;
        }
        Ok(value)
    }

    fn expect(&mut self, want: Token) -> Result<(), NpyError> {
        match self.next()? {
            t if t == want => Ok(()),
            t => err(format!("expected {want} in the .npy header, found {t}")),
        }
    }

    fn string_value(&mut self, key: &str) -> Result<String, NpyError> {
        match self.next()? {
            Token::Str(s) => Ok(s),
            Token::Open('[') | Token::Open('{') => err("structured dtypes are not supported"),
            t => err(format!("'{key}' must be a string in the .npy header, found {t}")),
        }
    }

    fn bool_value(&mut self, key: &str) -> Result<bool, NpyError> {
        match self.next()? {
            Token::Bool(b) => Ok(b),
            t => err(format!("'{key}' must be True or False in the .npy header, found {t}")),
        }
    }

    /// A tuple of integers: `()`, `(4,)`, `(2, 3)`, `(2, 3,)`. `(4)` is an int in Python,
    /// not a tuple, so it is refused as NumPy refuses it.
    fn shape_value(&mut self) -> Result<Vec<u64>, NpyError> {
        self.expect(Token::Open('('))?;
        let mut dims = match self.next()? {
            Token::Close(')') => return Ok(Vec::new()),
            Token::Int(n) => vec![n],
            t => return err(format!("expected a dimension or `)` in 'shape', found {t}")),
        };
        loop {
            match self.next()? {
                Token::Comma => {}
                Token::Close(')') if dims.len() > 1 => return Ok(dims),
                Token::Close(')') => return err("'shape' must be a tuple: write (N,) for one dimension"),
                t => return err(format!("expected `,` or `)` in 'shape', found {t}")),
            }
            match self.next()? {
                Token::Close(')') => return Ok(dims),
                Token::Int(n) => dims.push(n),
                t => return err(format!("expected a dimension or `)` in 'shape', found {t}")),
            }
            if dims.len() > 64 {
                return err("'shape' has more than 64 dimensions");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NumPy 1.26 writes for `np.save(f, np.arange(4, dtype='<f4'))`, preamble and
    /// header (128 bytes in all).
    fn numpy_arange4() -> Vec<u8> {
        let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        let dict = b"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
        file.extend_from_slice(dict);
        file.resize(127, b' ');
        file.push(b'\n');
        for v in [0.0f32, 1.0, 2.0, 3.0] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        file
    }

    fn header(text: &str) -> Result<Header, NpyError> {
        parse_header(text.as_bytes())
    }

    #[test]
    fn reads_what_numpy_writes() {
        let file = numpy_arange4();
        let (h, data) = read(&file).expect("valid");
        assert_eq!(h, Header { descr: "<f4".into(), fortran_order: false, shape: vec![4] });
        assert_eq!(data.len(), 16);
        assert_eq!(&data[4..8], &1.0f32.to_le_bytes());
    }

    #[test]
    fn writes_what_numpy_writes() {
        let file = numpy_arange4();
        assert_eq!(write("<f4", &[4], &file[128..]), file);
    }

    #[test]
    fn written_files_are_aligned_and_read_back() {
        for shape in [vec![], vec![7], vec![3, 4], vec![1, 2, 3, 4, 5]] {
            let count: u64 = shape.iter().product();
            let data = vec![1u8; count as usize];
            let file = write("|b1", &shape, &data);
            assert_eq!((file.len() - data.len()) % ALIGN, 0, "{shape:?}");
            assert_eq!(file[file.len() - data.len() - 1], b'\n');
            let (h, back) = read(&file).expect("round trip");
            assert_eq!(h.shape, shape);
            assert_eq!(h.descr, "|b1");
            assert_eq!(back, &data[..]);
        }
    }

    #[test]
    fn the_largest_shape_fits_version_1() {
        let shape = vec![u64::MAX; 64];
        let file = write("<u8", &shape, &[]);
        assert_eq!(&file[6..8], &[1, 0]);
        assert_eq!(file.len() % ALIGN, 0);
        let (h, data) = read(&file).expect("round trip");
        assert_eq!(h.shape, shape);
        assert!(data.is_empty());
        assert_eq!(h.element_count(), None);
    }

    #[test]
    fn versions_2_and_3_have_a_four_byte_length() {
        for major in [2u8, 3] {
            let dict = b"{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}\n";
            let mut file = MAGIC.to_vec();
            file.extend_from_slice(&[major, 0]);
            file.extend_from_slice(&(dict.len() as u32).to_le_bytes());
            file.extend_from_slice(dict);
            file.extend_from_slice(&7i32.to_le_bytes());
            let (h, data) = read(&file).expect("valid");
            assert_eq!(h.descr, "<i4");
            assert_eq!(data, &7i32.to_le_bytes());
        }
    }

    #[test]
    fn header_layout_variants_are_accepted() {
        let h = header("{\"shape\":(2,3),\"descr\":\"<u4\",\"fortran_order\":True}").expect("valid");
        assert_eq!(h, Header { descr: "<u4".into(), fortran_order: true, shape: vec![2, 3] });
        assert_eq!(header("{'descr': '<f2', 'fortran_order': False, 'shape': (), }").expect("0-d").shape, vec![]);
        assert_eq!(header("{'descr':'<f2','fortran_order':False,'shape':(5L, 2L,)}").expect("py2").shape, vec![5, 2]);
        assert_eq!(
            header("  { 'descr' : '<i8' , 'fortran_order' : False , 'shape' : ( 0 , ) }  \n").expect("spaces").shape,
            vec![0]
        );
    }

    #[test]
    fn element_count_and_order() {
        let h = |shape: Vec<u64>| Header { descr: "<f4".into(), fortran_order: true, shape };
        assert_eq!(h(vec![]).element_count(), Some(1));
        assert_eq!(h(vec![2, 0, 5]).element_count(), Some(0));
        assert_eq!(h(vec![u64::MAX, 2]).element_count(), None);
        assert!(h(vec![1, 8, 1]).order_is_irrelevant());
        assert!(!h(vec![2, 8]).order_is_irrelevant());
    }

    fn error_of(text: &str) -> String {
        match header(text) {
            Ok(h) => panic!("{text:?} accepted as {h:?}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn malformed_headers_are_errors() {
        let cases = [
            ("", "ends before"),
            ("{", "ends before"),
            ("{'descr': '<f4', 'fortran_order': False}", "lacks shape"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4)}", "must be a tuple"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", "unknown key 'x'"),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", "appears twice"),
            ("{'descr': 4, 'fortran_order': False, 'shape': (4,)}", "must be a string"),
            ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,)}", "structured dtypes"),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (4,)}", "True or False"),
            ("{'descr': '<f4', 'fortran_order': None, 'shape': (4,)}", "unexpected `None`"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,)}", "unexpected character `-`"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "does not fit 64 bits"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,,)}", "expected a dimension"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4 5)}", "expected `,` or `)`"),
            ("{'descr': '<f4 , 'fortran_order': False, 'shape': (4,)}", "unexpected `fortran`"),
            ("{'descr': '<f4\n', 'fortran_order': False, 'shape': (4,)}", "unterminated"),
            ("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (4,)}", "escape"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,)} x", "after the closing"),
            ("{'descr': '<f4' 'fortran_order': False, 'shape': (4,)}", "expected `,` or `}`"),
            ("['descr']", "expected `{`"),
        ];
        for (text, want) in cases {
            let got = error_of(text);
            assert!(got.contains(want), "{text:?}: {got:?} lacks {want:?}");
        }
        let deep = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({})}}", "1, ".repeat(100));
        assert!(error_of(&deep).contains("more than 64 dimensions"));
    }

    #[test]
    fn malformed_preambles_are_errors() {
        let good = numpy_arange4();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"PK\x03\x04".to_vec(), "not a NumPy"),
            (good[..7].to_vec(), "no version"),
            (good[..9].to_vec(), "no header length"),
            ([&good[..6], &[4, 0], &good[8..]].concat(), "version 4.0"),
            ([&good[..8], &[0xff, 0xff]].concat(), "only 0 after"),
            ([&good[..6], &[2, 0, 0xff, 0xff, 0xff, 0x7f]].concat(), "at most"),
            (good[..100].to_vec(), "claims 118 bytes"),
        ];
        for (bytes, want) in cases {
            match read(&bytes) {
                Ok(_) => panic!("{bytes:?} accepted"),
                Err(e) => assert!(e.0.contains(want), "{:?} lacks {want:?}", e.0),
            }
        }
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_a_header() {
        // No prefix or single-byte corruption of a valid file may panic.
        let good = numpy_arange4();
        for n in 0..good.len() {
            let _ = read(&good[..n]);
        }
        for i in 0..128 {
            for b in [0u8, b'\'', b'(', b')', b'{', b'}', b',', b'9', 0xff] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = read(&bad);
            }
        }
    }
}
