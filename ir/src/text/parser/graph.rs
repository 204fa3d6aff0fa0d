//! Graphs: the header and the statements of the body (`queue`, `dyn`, `dcg`, nodes, `edge`).
//!
//! Graph-local names must be defined before use: nodes, dynamic parameters and dynamic
//! command groups share one namespace ([`GraphScope::locals`]), queues have their own.

use super::command::CommandSpans;
use super::items::unknown;
use super::names::NameMap;
use super::resolve::ItemKind;
use super::{PResult, ParseError, Parser};
use crate::arena::Handle;
use crate::graph::{Alternative, DynCommandGroup, DynParam, Edge, EdgeKind, Graph, Node, NodeKind, Queue, Site, Stmt};
use crate::module::{Comments, Item};
use crate::span::{Span, SpanTable};
use crate::text::keyword::Kw;
use crate::text::lexer::TokenKind;

const GRAPH_HINT: &str = "a graph is `graph @name [device(N)] [context(N)] [properties(...)] { statements }`";
const STMT_HINT: &str =
    "a graph statement is `%node = <command> [on @queue] [device(N)] [after(%a, %b via accessor)]`, \
                         `queue @q`, `dyn %p = <value>`, `dcg %d active(N) { ... }` or `edge %a -> %b`";
pub(super) const NODE_HINT: &str =
    "a node is `%name = <command> [on @queue] [device(N)] [after(%a, %b via accessor, ...)]`";
const PROVENANCES: &str = "depends_on, all_leaves, accessor, event, in_order, barrier, transitive";

/// What a graph-local `%name` denotes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Local {
    /// A node.
    Node(Handle<Node>),
    /// A dynamic parameter.
    Dyn(Handle<DynParam>),
    /// A dynamic command group.
    Dcg(Handle<DynCommandGroup>),
}

impl Local {
    /// What the name is, for "wrong kind" errors.
    pub(super) fn describe(self, graph: &Graph) -> &'static str {
        match self {
            Local::Dyn(_) => "a dynamic parameter",
            Local::Dcg(_) => "a dynamic command group",
            Local::Node(h) => match graph.nodes.try_get(h).map(|n| &n.kind) {
                Some(NodeKind::AsyncMalloc { .. }) => "an async_malloc node",
                _ => "a node",
            },
        }
    }
}

/// Names visible in the graph being parsed, with their defining spans, and the spans of
/// statement parts collected for [`Graph::spans`].
#[derive(Default)]
pub(super) struct GraphScope<'s> {
    pub locals: NameMap<'s, (Local, Span)>,
    pub queues: NameMap<'s, (Handle<Queue>, Span)>,
    sites: SiteSpans,
}

/// A node statement read up to its last token (its edges and spans are in [`StmtBuffers`]).
pub(super) struct NodeStmt<'s> {
    pub name: &'s str,
    pub name_span: Span,
    pub kind: NodeKind,
    /// Whether `kind` holds real module handles (see `resolve.rs`).
    pub resolved: bool,
    pub queue: Option<Handle<Queue>>,
    /// `device(N)`.
    pub device: Option<u32>,
    pub comments: Comments,
}

/// Buffers that each node statement fills and the next one reuses, to save allocations.
#[derive(Default)]
pub(super) struct StmtBuffers {
    /// Spans of the command's parts.
    pub spans: CommandSpans,
    /// The `after(...)` edges.
    pub deps: Vec<(Handle<Node>, EdgeKind, Span)>,
}

/// [`Site`] spans by variant. Each list grows in key order (statements come in order), so
/// their concatenation in variant order is sorted and the map is built in linear time
/// rather than by one `BTreeMap` insertion per argument.
#[derive(Default)]
struct SiteSpans {
    node_args: Vec<(Site, Span)>,
    alt_args: Vec<(Site, Span)>,
    alts: Vec<(Site, Span)>,
    launches: Vec<(Site, Span)>,
    list_items: Vec<(Site, Span)>,
}

impl SiteSpans {
    /// Room for `lines` more statements: a large graph's lists then never move as they
    /// grow (what is not used is only address space, and is given back by `into_table`).
    fn reserve(&mut self, lines: usize) {
        // Kernel nodes have a launch and a few arguments each; the other lists are short.
        let _ = self.node_args.try_reserve(lines.saturating_mul(4));
        let _ = self.launches.try_reserve(lines);
    }

    fn into_table(self) -> SpanTable<Site> {
        let SiteSpans { mut node_args, alt_args, alts, launches, list_items } = self;
        for list in [alt_args, alts, launches, list_items] {
            node_args.extend(list);
        }
        node_args.shrink_to_fit();
        node_args.into_iter().collect()
    }
}

impl<'s> Parser<'s> {
    /// `graph := 'graph' GLOBAL graph_attr* '{' stmt* '}'`
    pub(super) fn graph_item(&mut self, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        self.hint = GRAPH_HINT;
        let (name, name_span) = self.expect_global("a graph name (`@name`)")?;
        self.define_item(ItemKind::Graph, name, self.module.graphs.len(), name_span);
        let mut graph = Graph { name: name.to_string(), ..Graph::default() };
        self.graph_attributes(&mut graph)?;
        let open = self.expect(TokenKind::LBrace)?.span;
        // Room for a statement per line left (canonical text has no more), so that a large
        // graph is not copied as it grows; the room not used is given back at the end.
        let lines = self.lex.lines_left();
        graph.nodes.reserve(lines);
        graph.edges.reserve(lines.saturating_mul(2));
        let _ = graph.body.try_reserve(lines);
        let mut scope = GraphScope::default();
        scope.sites.reserve(lines);
        scope.locals.reserve(lines);
        let mut bufs = StmtBuffers::default();
        let errors_before = self.errors.len();
        loop {
            let t = self.peek()?;
            if t.kind == TokenKind::RBrace {
                graph.closing_comments = self.closing_comments()?;
                self.bump()?;
                break;
            }
            if let Some(e) = self.unclosed(t, open, || format!("the body of graph `@{name}`")) {
                return Err(e);
            }
            self.hint = STMT_HINT;
            // A blank line before the statement (not the graph's first) is kept by `fmt`;
            // a statement after one takes the general path, which records it.
            let first_stmt = graph.body.is_empty();
            let blank = !first_stmt && self.blank_line_before(t);
            if !blank && t.kind == TokenKind::Local && self.fast_node_stmt(&mut graph, &mut scope, &mut bufs, t)? {
                continue;
            }
            let mut comments = self.leading_comments();
            comments.blank_before = blank;
            match t.kind {
                TokenKind::Local => self.node_stmt(&mut graph, &mut scope, &mut bufs, comments)?,
                TokenKind::Ident => match t.kw {
                    Kw::Queue => self.queue_stmt(&mut graph, &mut scope, comments)?,
                    Kw::Dyn => self.dyn_stmt(&mut graph, &mut scope, comments)?,
                    Kw::Dcg => self.dcg_stmt(&mut graph, &mut scope, comments)?,
                    Kw::Edge => self.edge_stmt(&mut graph, &scope, comments)?,
                    _ => return Err(self.unexpected(t, "a graph statement")),
                },
                _ => return Err(self.unexpected(t, "a graph statement or `}`")),
            }
        }
        // Kinds of the "undefined" errors for names that this graph's statements define.
        const LOCAL_KINDS: &[&str] =
            &["node", "dynamic command group", "dynamic parameter or allocation", "allocation"];
        if self.errors.len() > errors_before {
            // The node statement holding a use (errors are few: a scan each is cheap).
            let user = |at: Span| {
                let within = |s: Span| s.start <= at.start && at.end <= s.end;
                graph.nodes.iter().find(|(h, _)| within(graph.nodes.span(*h))).map(|(_, n)| format!("%{}", n.name))
            };
            let local = |n: &str| scope.locals.get(n).map(|&(_, def)| def);
            self.defined_later(errors_before, '%', LOCAL_KINDS, local, user);
            let queue = |n: &str| scope.queues.get(n).map(|&(_, def)| def);
            self.defined_later(errors_before, '@', &["queue"], queue, |_| None);
        }
        graph.spans = std::mem::take(&mut scope.sites).into_table();
        graph.nodes.shrink_to_fit();
        graph.edges.shrink_to_fit();
        graph.body.shrink_to_fit();
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        graph.comments = comments;
        let handle = self.module.graphs.append(graph, span);
        self.module.items.push(Item::Graph(handle));
        Ok(())
    }

    /// `graph_attr*`, in any order, each at most once.
    fn graph_attributes(&mut self, graph: &mut Graph) -> PResult<()> {
        let mut seen: [Option<Span>; 3] = [None; 3];
        loop {
            let t = self.peek()?;
            let slot = match (t.kind, t.kw) {
                (TokenKind::Ident, Kw::Device) => 0,
                (TokenKind::Ident, Kw::Context) => 1,
                (TokenKind::Ident, Kw::Properties) => 2,
                _ => return Ok(()),
            };
            self.bump()?;
            if let Some(first) = seen[slot] {
                self.error(ParseError::DuplicateAttribute { name: self.text(t).to_string(), span: t.span, first });
            }
            seen[slot] = Some(t.span);
            match slot {
                0 | 1 => {
                    self.expect(TokenKind::LParen)?;
                    let value = self.expect_u32(if slot == 0 { "a device index" } else { "a context index" })?;
                    self.expect(TokenKind::RParen)?;
                    if slot == 0 {
                        graph.device = value;
                    } else {
                        graph.context = value;
                    }
                }
                _ => {
                    let mut firsts: NameMap<'s, Span> = NameMap::default();
                    self.paren_list(|p| {
                        let (word, w) = p.expect_word("a graph property")?;
                        if !graph.properties.set(word) {
                            return Err(unknown(
                                "graph property",
                                word,
                                "no_cycle_check, assume_buffer_outlives_graph, updatable, enable_profiling",
                                w.span,
                            ));
                        }
                        if let Err(e) = firsts.insert_with(word, || w.span) {
                            let first = firsts.entry(e).copied().unwrap_or(w.span);
                            p.error(ParseError::DuplicateAttribute { name: word.to_string(), span: w.span, first });
                        }
                        Ok(())
                    })?;
                }
            }
        }
    }

    /// Defines a graph-local name, recording a duplicate as an error.
    fn define_local(&mut self, scope: &mut GraphScope<'s>, name: &'s str, local: Local, span: Span) {
        if let Err(e) = scope.locals.insert_with(name, || (local, span)) {
            let first = scope.locals.entry(e).map_or(span, |&(_, first)| first);
            self.error(ParseError::Duplicate { name: format!("%{name}"), span, first });
        }
    }

    /// Resolves a `%name` that must be a node; records an error and returns `None` otherwise.
    pub(super) fn node_ref(&mut self, graph: &Graph, scope: &GraphScope<'s>) -> PResult<Option<Handle<Node>>> {
        let (name, span) = self.expect_local("a node name (`%name`)")?;
        match scope.locals.get(name) {
            Some(&(Local::Node(h), _)) => return Ok(Some(h)),
            Some(&(other, def)) => self.error(ParseError::WrongKind {
                name: format!("%{name}"),
                expected: "a node",
                found: other.describe(graph),
                span,
                def,
            }),
            None => self.error(ParseError::Undefined {
                kind: "node",
                name: format!("%{name}"),
                help: "a node must be defined by an earlier statement of the same graph",
                suggestion: suggest_local(scope, name),
                span,
            }),
        }
        Ok(None)
    }

    /// `queue := 'queue' GLOBAL ('in_order')? ('discard_events')?`
    fn queue_stmt(&mut self, graph: &mut Graph, scope: &mut GraphScope<'s>, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        self.hint = "a queue is `queue @name [in_order] [discard_events]`";
        let (name, name_span) = self.expect_global("a queue name (`@name`)")?;
        let in_order = self.eat_keyword(Kw::InOrder)?;
        let discard_events = self.eat_keyword(Kw::DiscardEvents)?;
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let queue = Queue { name: name.to_string(), in_order, discard_events, comments };
        let h = graph.queues.append(queue, span);
        if let Err(e) = scope.queues.insert_with(name, || (h, name_span)) {
            let first = scope.queues.entry(e).map_or(name_span, |&(_, first)| first);
            self.error(ParseError::Duplicate { name: format!("@{name}"), span: name_span, first });
        }
        graph.body.push(Stmt::Queue(h));
        Ok(())
    }

    /// `dyn := 'dyn' LOCAL '=' value`
    fn dyn_stmt(&mut self, graph: &mut Graph, scope: &mut GraphScope<'s>, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        self.hint = "a dynamic parameter is `dyn %name = <value>`, e.g. `dyn %a = 2.0 : f32`, `dyn %p = @x`";
        let (name, name_span) = self.expect_local("a parameter name (`%name`)")?;
        self.expect(TokenKind::Eq)?;
        let value = self.arg_value(graph, scope, true)?;
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let h = graph.dyn_params.append(DynParam { name: name.to_string(), value, comments }, span);
        self.define_local(scope, name, Local::Dyn(h), name_span);
        graph.body.push(Stmt::DynParam(h));
        Ok(())
    }

    /// `dcg := 'dcg' LOCAL 'active' '(' INT ')' '{' command* '}'`
    fn dcg_stmt(&mut self, graph: &mut Graph, scope: &mut GraphScope<'s>, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        let hint = "a dynamic command group is `dcg %name active(N) { <command> ... }`";
        self.hint = hint;
        let (name, name_span) = self.expect_local("a command group name (`%name`)")?;
        self.expect_keyword(Kw::Active)?;
        self.expect(TokenKind::LParen)?;
        let active = self.expect_u32("an active index")?;
        self.expect(TokenKind::RParen)?;
        self.expect(TokenKind::LBrace)?;
        let mut alternatives = Vec::new();
        let mut sites = Vec::new();
        let mut spans = CommandSpans::default();
        while self.peek()?.kind != TokenKind::RBrace {
            let start = self.peek()?.span.start as usize;
            let kind = self.command(graph, scope, &mut spans)?;
            self.hint = hint;
            let index = u32::try_from(alternatives.len()).unwrap_or(u32::MAX);
            // The group's handle exists only once it is appended: keep (alternative,
            // argument) pairs until then.
            sites.push((index, None, Span::new(start, self.prev_end as usize)));
            for (i, arg) in spans.args.iter().enumerate() {
                sites.push((index, Some(i as u32), *arg));
            }
            alternatives.push(match kind {
                NodeKind::Kernel(cmd) => Alternative::Kernel(cmd),
                NodeKind::HostTask(task) => Alternative::HostTask(task),
                other => Alternative::Other(Box::new(other)),
            });
        }
        self.bump()?;
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let dcg = DynCommandGroup { name: name.to_string(), active, alternatives, comments };
        let h = graph.dcgs.append(dcg, span);
        for (alt, arg, span) in sites {
            match arg {
                None => scope.sites.alts.push((Site::Alt(h, alt), span)),
                Some(arg) => scope.sites.alt_args.push((Site::AltArg(h, alt, arg), span)),
            }
        }
        self.define_local(scope, name, Local::Dcg(h), name_span);
        graph.body.push(Stmt::Dcg(h));
        Ok(())
    }

    /// `make_edge := 'edge' LOCAL '->' LOCAL`
    fn edge_stmt(&mut self, graph: &mut Graph, scope: &GraphScope<'s>, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        self.hint = "an explicit edge is `edge %from -> %to`";
        let from = self.node_ref(graph, scope)?;
        self.expect(TokenKind::Arrow)?;
        let to = self.node_ref(graph, scope)?;
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        if let (Some(from), Some(to)) = (from, to) {
            let h = graph.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, span);
            if !comments.is_bare() {
                graph.edge_comments.insert(h, comments);
            }
            graph.body.push(Stmt::MakeEdge(h));
        }
        Ok(())
    }

    /// `node := LOCAL '=' command ('on' GLOBAL)? ('device' '(' INT ')')? after?`
    fn node_stmt(
        &mut self,
        graph: &mut Graph,
        scope: &mut GraphScope<'s>,
        bufs: &mut StmtBuffers,
        comments: Comments,
    ) -> PResult<()> {
        self.hint = NODE_HINT;
        let (name, name_span) = self.expect_local("a node name")?;
        self.expect(TokenKind::Eq)?;
        let mut kind = self.command(graph, scope, &mut bufs.spans)?;
        self.hint = NODE_HINT;
        let mut queue = None;
        if self.eat_keyword(Kw::On)? {
            let (q, q_span) = self.expect_global("a queue name (`@name`)")?;
            match scope.queues.get(q) {
                Some(&(h, _)) => queue = Some(h),
                None => self.error(ParseError::Undefined {
                    kind: "queue",
                    name: format!("@{q}"),
                    help: "declare the queue earlier in the same graph: `queue @q [in_order]`",
                    suggestion: crate::suggest::closest(q, scope.queues.iter().map(|(n, _)| *n))
                        .map(|s| format!("@{s}")),
                    span: q_span,
                }),
            }
        }
        let mut device = None;
        if self.eat_keyword(Kw::Device)? {
            self.expect(TokenKind::LParen)?;
            device = Some(self.expect_u32("a device index")?);
            self.expect(TokenKind::RParen)?;
        }
        let deps = &mut bufs.deps;
        deps.clear();
        if self.eat_keyword(Kw::After)? {
            self.expect(TokenKind::LParen)?;
            loop {
                // `%next = ...` on the next line: this list's `)` was forgotten, and the next
                // statement is not one more dependency (that would add an "undefined node"
                // error for its name before the syntax error).
                let t = self.peek()?;
                let rest = self.lex.source().get(t.span.end as usize..).unwrap_or("");
                if t.kind == TokenKind::Local && rest.trim_start_matches([' ', '\t']).starts_with('=') {
                    return Err(self.missing_at_line_end(t, "`)`"));
                }
                if let Some(dep) = self.dependency(graph, scope)? {
                    deps.push(dep);
                }
                if !self.eat(TokenKind::Comma)? {
                    break;
                }
            }
            self.expect(TokenKind::RParen)?;
        }
        let resolved = self.syms.resolve_now(&mut kind);
        self.finish_node(graph, scope, bufs, NodeStmt { name, name_span, kind, resolved, queue, device, comments })
    }

    /// The end of a node statement whose last token was just consumed: its trailing
    /// comment, the node, its name, its edges and the spans of its parts. Shared by the
    /// general path and the fast path (`fast.rs`), which read the statement differently.
    pub(super) fn finish_node(
        &mut self,
        graph: &mut Graph,
        scope: &mut GraphScope<'s>,
        bufs: &StmtBuffers,
        node: NodeStmt<'s>,
    ) -> PResult<()> {
        let NodeStmt { name, name_span, kind, resolved, queue, device, mut comments } = node;
        let StmtBuffers { spans, deps } = bufs;
        let span = Span::new(name_span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let h = graph.nodes.append(Node { name: name.to_string(), kind, queue, device, comments }, span);
        if !resolved {
            self.syms.later(self.module.graphs.len(), h);
        }
        self.define_local(scope, name, Local::Node(h), name_span);
        for &(from, kind, span) in deps.iter() {
            graph.edges.append(Edge { from, to: h, kind }, span);
        }
        let sites = &mut scope.sites;
        if let Some(launch) = spans.launch {
            sites.launches.push((Site::NodeLaunch(h), launch));
        }
        for (i, &arg) in spans.args.iter().enumerate() {
            sites.node_args.push((Site::NodeArg(h, i as u32), arg));
        }
        for (i, &item) in spans.items.iter().enumerate() {
            sites.list_items.push((Site::NodeListItem(h, i as u32), item));
        }
        graph.body.push(Stmt::Node(h));
        Ok(())
    }

    /// `dep := LOCAL ('via' provenance)?`
    fn dependency(&mut self, graph: &Graph, scope: &GraphScope<'s>) -> PResult<Option<(Handle<Node>, EdgeKind, Span)>> {
        let start = self.peek()?.span.start as usize;
        let node = self.node_ref(graph, scope)?;
        let mut kind = EdgeKind::DependsOn;
        if self.eat_keyword(Kw::Via)? {
            let (word, t) = self.expect_word("an edge provenance")?;
            kind = match EdgeKind::from_keyword(word) {
                Some(k) if k != EdgeKind::MakeEdge => k,
                _ => return Err(unknown("edge provenance", word, PROVENANCES, t.span)),
            };
        }
        let span = Span::new(start, self.prev_end as usize);
        Ok(node.map(|n| (n, kind, span)))
    }
}

/// The closest `%` name defined so far in the graph, for an undefined one ("did you mean").
pub(super) fn suggest_local(scope: &GraphScope<'_>, name: &str) -> Option<String> {
    crate::suggest::closest(name, scope.locals.iter().map(|(n, _)| *n)).map(|s| format!("%{s}"))
}
