//! The structural keywords of the text format, recognised once by the lexer.
//!
//! The parser branches on keywords at almost every statement (`kernel`, `range`, `args`,
//! `after`, ...). Comparing words as strings there cost a string comparison per keyword
//! tried; instead the lexer tags each word with its [`Kw`] as it scans it, and the parser
//! compares one byte. Words that name a value rather than a construct (types, access modes,
//! op names, provenances) are compared as text where they are parsed.

/// Defines [`Kw`] with its spellings.
macro_rules! keywords {
    ($($kw:ident = $text:literal,)*) => {
        /// A structural keyword, or [`Kw::None`] for any other word.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Kw {
            /// Not a structural keyword.
            None,
            $(
                #[doc = concat!("Spelled ", stringify!($text), ".")]
                $kw,
            )*
        }

        impl Kw {
            /// The keyword spelled `word`, or [`Kw::None`].
            pub fn of(word: &[u8]) -> Kw {
                match word {
                    $($text => Kw::$kw,)*
                    _ => Kw::None,
                }
            }

            /// The spelling.
            pub fn text(self) -> &'static str {
                match self {
                    Kw::None => "",
                    $(Kw::$kw => std::str::from_utf8($text).unwrap_or(""),)*
                }
            }
        }
    };
}

keywords! {
    // Items.
    Kernel = b"kernel",
    Func = b"func",
    Usm = b"usm",
    Buffer = b"buffer",
    DeviceGlobal = b"device_global",
    Graph = b"graph",
    // Graph statements and attributes.
    Queue = b"queue",
    Dyn = b"dyn",
    Dcg = b"dcg",
    Edge = b"edge",
    Device = b"device",
    Home = b"home",
    Replicated = b"replicated",
    Context = b"context",
    Properties = b"properties",
    On = b"on",
    After = b"after",
    Via = b"via",
    InOrder = b"in_order",
    DiscardEvents = b"discard_events",
    Active = b"active",
    // Commands and their parts.
    Empty = b"empty",
    Memcpy = b"memcpy",
    Memset = b"memset",
    Memfill = b"memfill",
    Prefetch = b"prefetch",
    Memadvise = b"memadvise",
    Send = b"send",
    Recv = b"recv",
    Allreduce = b"allreduce",
    From = b"from",
    Tag = b"tag",
    Barrier = b"barrier",
    HostTask = b"host_task",
    Native = b"native",
    Subgraph = b"subgraph",
    AsyncMalloc = b"async_malloc",
    AsyncFree = b"async_free",
    Dynamic = b"dynamic",
    While = b"while",
    Switch = b"switch",
    Then = b"then",
    Do = b"do",
    Cases = b"cases",
    Wait = b"wait",
    Access = b"access",
    ZeroInit = b"zero_init",
    Args = b"args",
    SingleTask = b"single_task",
    Range = b"range",
    NdRange = b"nd_range",
    Global = b"global",
    Local = b"local",
    Offset = b"offset",
    // Values.
    Acc = b"acc",
    True = b"true",
    False = b"false",
    // Kernels.
    Buf = b"buf",
    Spirv = b"spirv",
    Wgsl = b"wgsl",
    Glsl = b"glsl",
    Entry = b"entry",
    Bindings = b"bindings",
    For = b"for",
    If = b"if",
    Else = b"else",
    To = b"to",
    Step = b"step",
    Carry = b"carry",
    Call = b"call",
    Loop = b"loop",
}

#[cfg(test)]
mod tests {
    use super::Kw;

    #[test]
    fn keywords_round_trip_and_other_words_are_none() {
        for word in ["kernel", "after", "single_task", "device_global", "carry", "false"] {
            let kw = Kw::of(word.as_bytes());
            assert_ne!(kw, Kw::None, "{word}");
            assert_eq!(kw.text(), word);
        }
        for word in ["", "kernels", "Kernel", "f32", "add", "read_write", "inf"] {
            assert_eq!(Kw::of(word.as_bytes()), Kw::None, "{word}");
        }
    }
}
