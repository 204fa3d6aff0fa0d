//! Module items: the top-level loop and memory declarations (`usm`, `buffer`,
//! `device_global`). Kernels and graphs have their own files.

use super::resolve::ItemKind;
use super::{PResult, ParseError, Parser};
use crate::module::{Comments, DeviceGlobal, Home, HostAccess, InitMode, Item, MemoryKind, MemoryObject, UsmKind};
use crate::span::Span;
use crate::text::keyword::Kw;
use crate::text::lexer::TokenKind;
use crate::types::Literal;

const MEMORY_HINT: &str = "memory is declared as `usm @x : f32[N] [shared|host] [home(N)|home(host)|replicated]`, \
                           `buffer @b : f32[N] [home(N)|home(host)|replicated]` \
                           or `device_global @g : T[N] [= [lit, ...]] [properties(...)]`";

const ITEMS: &str = "kernel, func, usm, buffer, device_global, graph";

impl<'s> Parser<'s> {
    /// `module := item*`
    pub(super) fn module(&mut self) -> PResult<()> {
        loop {
            let t = self.peek()?;
            if t.kind == TokenKind::Eof {
                self.module.trailing_comments = self.closing_comments()?;
                return Ok(());
            }
            // Blank lines the user wrote around the item's leading comments (kept by `fmt`).
            let src = self.lex.source();
            let first = self.lex.comments.front().map_or(t.span.start, |c| c.span.start);
            let last_end = self.lex.comments.back().map(|c| c.span.end);
            let blank = |from: u32, to: u32| {
                src.get(from as usize..to as usize).is_some_and(|gap| gap.matches('\n').count() >= 2)
            };
            // The printer puts a blank line between items except inside a run of memory
            // declarations: only a blank line it would not print is recorded.
            let memory_run = matches!(self.module.items.last(), Some(Item::Memory(_)))
                && matches!(t.kw, Kw::Usm | Kw::Buffer | Kw::DeviceGlobal);
            let blank_before = memory_run && blank(self.prev_end, first);
            let blank_after_leading = last_end.is_some_and(|end| blank(end, t.span.start));
            let mut comments = self.leading_comments();
            comments.blank_before = blank_before;
            comments.blank_after_leading = blank_after_leading && !comments.leading.is_empty();
            self.hint = "a module is a sequence of items: `kernel`, `func`, `usm`, `buffer`, `device_global`, `graph`";
            match t.kind {
                TokenKind::Ident => match t.kw {
                    Kw::Kernel => self.kernel_item(comments)?,
                    Kw::Func => self.func_item(comments)?,
                    Kw::Usm | Kw::Buffer | Kw::DeviceGlobal => self.memory_item(comments)?,
                    Kw::Graph => self.graph_item(comments)?,
                    _ => return Err(unknown("item", self.text(t), ITEMS, t.span)),
                },
                _ => {
                    return Err(
                        self.unexpected(t, "an item (`kernel`, `func`, `usm`, `buffer`, `device_global` or `graph`)")
                    )
                }
            }
        }
    }

    /// Defines a module-level name, recording a duplicate as an error.
    pub(super) fn define_item(&mut self, kind: ItemKind, name: &'s str, index: usize, span: Span) {
        if let Err(e) = self.syms.define(kind, name, index, span) {
            self.error(e);
        }
    }

    /// `memory := usm ... | buffer ... | device_global ...`
    fn memory_item(&mut self, mut comments: Comments) -> PResult<()> {
        let (keyword, first) = self.expect_word("a memory declaration")?;
        self.hint = MEMORY_HINT;
        let (name, name_span) = self.expect_global("a memory name (`@name`)")?;
        self.expect(TokenKind::Colon)?;
        let elem = self.ty()?;
        self.expect(TokenKind::LBracket)?;
        let count = self.expect_u64("an element count")?;
        self.expect(TokenKind::RBracket)?;
        let kind = match keyword {
            "usm" => MemoryKind::Usm(self.usm_kind()?),
            "buffer" => MemoryKind::Buffer,
            _ => MemoryKind::DeviceGlobal(self.device_global()?),
        };
        // A `device_global` has an instance per device already: it takes no home.
        let mut home = Home::Graph;
        if !matches!(kind, MemoryKind::DeviceGlobal(_)) {
            if self.eat_keyword(Kw::Home)? {
                self.expect(TokenKind::LParen)?;
                let t = self.peek()?;
                home = if t.kind == TokenKind::Ident && self.text(t) == "host" {
                    self.bump()?;
                    Home::Host
                } else {
                    Home::Device(self.expect_u32("a device index or `host`")?)
                };
                self.expect(TokenKind::RParen)?;
            } else if self.eat_keyword(Kw::Replicated)? {
                home = Home::Replicated;
            }
        }
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        self.define_item(ItemKind::Memory, name, self.module.memories.len(), name_span);
        let memory = MemoryObject { name: name.to_string(), elem, count, kind, home, comments };
        let handle = self.module.memories.append(memory, span);
        self.module.items.push(Item::Memory(handle));
        Ok(())
    }

    /// `usm_kind := device | shared | host`, optional (default `device`).
    pub(super) fn usm_kind(&mut self) -> PResult<UsmKind> {
        let t = self.peek()?;
        // `device(N)` after an allocation is the node's device, not its kind.
        let rest = self.lex.source().get(t.span.end as usize..).unwrap_or("");
        if t.kind == TokenKind::Ident && !rest.starts_with('(') {
            if let Some(kind) = UsmKind::from_keyword(self.text(t)) {
                self.bump()?;
                return Ok(kind);
            }
        }
        Ok(UsmKind::Device)
    }

    /// `('=' '[' lit (',' lit)* ']')? dg_props?`
    fn device_global(&mut self) -> PResult<DeviceGlobal> {
        let mut dg = DeviceGlobal::default();
        if self.eat(TokenKind::Eq)? {
            self.expect(TokenKind::LBracket)?;
            loop {
                let (value, _) = self.literal()?;
                dg.init.push(Literal { value, ty: None });
                if !self.eat(TokenKind::Comma)? {
                    break;
                }
            }
            self.expect(TokenKind::RBracket)?;
        }
        if self.eat_keyword(Kw::Properties)? {
            let mut seen: [Option<Span>; 4] = [None; 4];
            self.paren_list(|p| p.device_global_property(&mut dg, &mut seen))?;
        }
        Ok(dg)
    }

    /// One `dg_prop`; `seen` holds where each property was first written.
    fn device_global_property(&mut self, dg: &mut DeviceGlobal, seen: &mut [Option<Span>; 4]) -> PResult<()> {
        let (word, t) = self.expect_word("a device_global property")?;
        let slot = match word {
            "device_image_scope" => {
                dg.device_image_scope = true;
                0
            }
            "implement_in_csr" => {
                dg.implement_in_csr = true;
                1
            }
            "host_access" => {
                self.expect(TokenKind::LParen)?;
                let (mode, m) = self.expect_word("a host access mode")?;
                dg.host_access = Some(match mode {
                    "read" => HostAccess::Read,
                    "write" => HostAccess::Write,
                    "read_write" => HostAccess::ReadWrite,
                    "none" => HostAccess::None,
                    _ => return Err(unknown("host access mode", mode, "read, write, read_write, none", m.span)),
                });
                self.expect(TokenKind::RParen)?;
                2
            }
            "init_mode" => {
                self.expect(TokenKind::LParen)?;
                let (mode, m) = self.expect_word("an init mode")?;
                dg.init_mode = Some(match mode {
                    "reprogram" => InitMode::Reprogram,
                    "reset" => InitMode::Reset,
                    _ => return Err(unknown("init mode", mode, "reprogram, reset", m.span)),
                });
                self.expect(TokenKind::RParen)?;
                3
            }
            _ => {
                return Err(unknown(
                    "device_global property",
                    word,
                    "device_image_scope, implement_in_csr, host_access(...), init_mode(...)",
                    t.span,
                ))
            }
        };
        if let Some(first) = seen[slot] {
            self.error(ParseError::DuplicateAttribute { name: word.to_string(), span: t.span, first });
        } else {
            seen[slot] = Some(t.span);
        }
        Ok(())
    }
}

/// A [`ParseError::UnknownKeyword`].
pub(super) fn unknown(what: &'static str, found: &str, allowed: &'static str, span: Span) -> Box<ParseError> {
    // The allowed words as written in the help (`vec2<T>` suggests as `vec2`).
    let words = allowed.split(", ").map(|w| w.split('<').next().unwrap_or(w));
    let suggestion = match what {
        "op" => crate::suggest::op_alias(found).or_else(|| crate::suggest::closest(found, words)),
        _ => crate::suggest::closest(found, words),
    };
    let suggestion = suggestion.map(str::to_string);
    Box::new(ParseError::UnknownKeyword { what, found: found.to_string(), allowed, suggestion, span })
}
