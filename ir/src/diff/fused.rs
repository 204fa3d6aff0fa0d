//! Which nodes of B are kernel fusions of nodes of A (`fuse-kernels`), so that the diff says
//! "fused from %k0, %k1, %k2" instead of listing the absorbed nodes as removed and the fused
//! node's kernel, launch and arguments as changed.
//!
//! `fuse-kernels` keeps the name of the member created last for the fused node and names the
//! fused kernel `fused.<member>.<member>...` in the order the members ran (docs/fusion.md,
//! "Names"). A node of B is a fusion when A has a kernel node of the same name, B's node
//! launches a kernel named `fused.*` that A's node did not, and its members are found:
//!
//! 1. by the kernel's name: split after `fused.` into names of kernel nodes only A has (plus
//!    the node itself), with a trailing `$<k>more` (members the name left out) or `<digits>`
//!    (the suffix that makes a kernel name unique) allowed;
//! 2. else, or when the name left members out, by the memory they touch: a kernel node only
//!    A has over the same launch whose buffers are all among the fused node's buffers or
//!    allocations only A has (the temporaries that died in the fusion), reached from the
//!    fused node's buffers or through such a temporary. That covers a fused kernel shared by
//!    identical groups (named after the first group only).

use crate::edit::referenced_nodes;
use crate::graph::{Arg, ArgValue, Graph, MemRef, NodeKind};
use crate::module::Module;
use std::collections::{BTreeMap, BTreeSet};

/// The fusions between a graph of A and its partner in B.
#[derive(Default)]
pub(super) struct Fusions {
    /// Fused node of B (a name A has too) -> its members, A's names in A's creation order.
    pub members: BTreeMap<String, Vec<String>>,
    /// Member of A that B no longer has -> the fused node it became part of.
    pub absorbed: BTreeMap<String, String>,
    /// `async_malloc`/`async_free` node of A whose allocation only members of one fusion
    /// used -> that fused node.
    pub temporaries: BTreeMap<String, String>,
}

/// The buffers a kernel node passes, by name (`@mem` or `%alloc`).
fn buffers(graph: &Graph, kind: &NodeKind, module: &Module) -> Vec<String> {
    let NodeKind::Kernel(cmd) = kind else { return Vec::new() };
    cmd.args
        .iter()
        .filter_map(|a| match a {
            Arg::Value(ArgValue::Pointer(p)) => Some(match p.base {
                MemRef::Memory(h) => format!("@{}", module.memories.try_get(h).map_or("?", |m| m.name.as_str())),
                MemRef::Alloc(h) => format!("%{}", graph.nodes.try_get(h).map_or("?", |n| n.name.as_str())),
            }),
            _ => None,
        })
        .collect()
}

fn kernel_name<'m>(module: &'m Module, kind: &NodeKind) -> Option<&'m str> {
    match kind {
        NodeKind::Kernel(cmd) => module.kernels.try_get(cmd.kernel).map(|k| k.name.as_str()),
        _ => None,
    }
}

/// Splits `s` (a fused kernel's name after `fused.`) into words `is_name` accepts;
/// `Some((names, more))` when it splits completely, `more` when it ends in `$<k>more`.
fn split<'s>(s: &'s str, is_name: &dyn Fn(&str) -> bool) -> Option<(Vec<&'s str>, bool)> {
    // Positions from which the rest does not split (names may contain dots, so a prefix can
    // match in several ways).
    let mut dead = BTreeSet::new();
    let mut out = Vec::new();
    fn go<'s>(
        s: &'s str,
        at: usize,
        is_name: &dyn Fn(&str) -> bool,
        dead: &mut BTreeSet<usize>,
        out: &mut Vec<&'s str>,
    ) -> Option<bool> {
        let rest = s.get(at..)?;
        if let Some(k) = rest.strip_prefix('$').and_then(|r| r.strip_suffix("more")) {
            if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) && !out.is_empty() {
                return Some(true);
            }
        }
        if dead.contains(&at) {
            return None;
        }
        let ends = rest.match_indices('.').map(|(i, _)| i).chain([rest.len()]);
        for end in ends {
            let word = rest.get(..end)?;
            if is_name(word) {
                out.push(word);
                if end == rest.len() {
                    return Some(false);
                }
                if let Some(more) = go(s, at + end + 1, is_name, dead, out) {
                    return Some(more);
                }
                out.pop();
            }
        }
        // The unique-name suffix (`fused.a.b.1`) after at least one member.
        if !out.is_empty() && !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
            return Some(false);
        }
        dead.insert(at);
        None
    }
    let more = go(s, 0, is_name, &mut dead, &mut out)?;
    Some((out, more))
}

/// Finds the fusions from graph `x` of `a` to graph `y` of `b`.
pub(super) fn find(a: &Module, x: &Graph, b: &Module, y: &Graph) -> Fusions {
    let mut f = Fusions::default();
    let in_b: BTreeSet<&str> = y.nodes.iter().map(|(_, n)| n.name.as_str()).collect();
    // A's nodes by name, with their creation position (`Graph::node_by_name` scans).
    let mut in_a: BTreeMap<&str, (usize, &crate::graph::Node)> = BTreeMap::new();
    for (i, (_, n)) in x.nodes.iter().enumerate() {
        in_a.entry(n.name.as_str()).or_insert((i, n));
    }
    // A's kernel nodes that B no longer has, by name, with their creation position.
    let gone: BTreeMap<&str, usize> = x
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, (_, n))| matches!(n.kind, NodeKind::Kernel(_)) && !in_b.contains(n.name.as_str()))
        .map(|(i, (_, n))| (n.name.as_str(), i))
        .collect();
    // A's allocations that B no longer has.
    let gone_allocs: BTreeSet<String> = x
        .nodes
        .iter()
        .filter(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. }) && !in_b.contains(n.name.as_str()))
        .map(|(_, n)| format!("%{}", n.name))
        .collect();
    if gone.is_empty() {
        return f;
    }
    // Gone kernel nodes by the buffers they pass.
    let mut users: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut bufs_of: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (_, n) in x.nodes.iter().filter(|(_, n)| gone.contains_key(n.name.as_str())) {
        let bufs = buffers(x, &n.kind, a);
        for buf in &bufs {
            users.entry(buf.clone()).or_default().push(n.name.as_str());
        }
        bufs_of.insert(n.name.as_str(), bufs);
    }
    let position = |name: &str| in_a.get(name).map(|(i, _)| *i);
    let mut claimed: BTreeSet<&str> = BTreeSet::new();
    for (_, nb) in y.nodes.iter() {
        let Some(kb) = kernel_name(b, &nb.kind) else { continue };
        let Some(rest) = kb.strip_prefix("fused.") else { continue };
        let Some(&(_, na)) = in_a.get(nb.name.as_str()) else { continue };
        let Some(ka) = kernel_name(a, &na.kind) else { continue };
        if ka == kb {
            continue;
        }
        // Looked up, not collected: a set of the candidates per fused node would make the
        // diff of a graph with many fusions quadratic.
        let is_name = |w: &str| w == nb.name || (gone.contains_key(w) && !claimed.contains(w));
        let mut members: BTreeSet<&str> = BTreeSet::new();
        let by_name = split(rest, &is_name).filter(|(m, _)| m.contains(&nb.name.as_str()));
        let complete = matches!(by_name, Some((_, false)));
        if let Some((m, _)) = &by_name {
            members.extend(m.iter().filter(|n| **n != nb.name.as_str()));
        }
        if !complete {
            // By memory: from the fused node's buffers, then through dead temporaries.
            let own: BTreeSet<String> = buffers(y, &nb.kind, b).into_iter().collect();
            let launch = match &nb.kind {
                NodeKind::Kernel(cmd) => Some(&cmd.launch),
                _ => None,
            };
            let fits = |m: &str| {
                let same_launch = in_a
                    .get(m)
                    .is_some_and(|(_, n)| matches!(&n.kind, NodeKind::Kernel(c) if Some(&c.launch) == launch));
                same_launch
                    && bufs_of.get(m).is_some_and(|bs| bs.iter().all(|b| own.contains(b) || gone_allocs.contains(b)))
            };
            let mut queue: Vec<String> = own.iter().cloned().collect();
            let mut seen: BTreeSet<String> = queue.iter().cloned().collect();
            while let Some(buf) = queue.pop() {
                for &m in users.get(&buf).map(Vec::as_slice).unwrap_or(&[]) {
                    if claimed.contains(m) || members.contains(m) || !fits(m) {
                        continue;
                    }
                    members.insert(m);
                    for next in bufs_of.get(m).map(Vec::as_slice).unwrap_or(&[]) {
                        if gone_allocs.contains(next) && seen.insert(next.clone()) {
                            queue.push(next.clone());
                        }
                    }
                }
            }
        }
        if members.is_empty() {
            continue;
        }
        claimed.extend(members.iter().copied());
        let mut all: Vec<&str> = members.into_iter().chain([nb.name.as_str()]).collect();
        all.sort_by_key(|n| position(n));
        for m in &all {
            if *m != nb.name {
                f.absorbed.insert(m.to_string(), nb.name.clone());
            }
        }
        f.members.insert(nb.name.clone(), all.into_iter().map(str::to_string).collect());
    }
    // Temporaries every user of which is a member of one fusion, and their frees.
    let fusion_of =
        |name: &str| f.absorbed.get(name).cloned().or_else(|| f.members.contains_key(name).then(|| name.to_string()));
    let mut temps: BTreeMap<String, String> = BTreeMap::new();
    let mut spoiled: BTreeSet<String> = BTreeSet::new();
    let mut frees: Vec<(String, String)> = Vec::new();
    for (_, n) in x.nodes.iter() {
        for h in referenced_nodes(x, &n.kind) {
            let Some(alloc) = x.nodes.try_get(h).map(|m| m.name.clone()) else { continue };
            if in_b.contains(alloc.as_str()) {
                continue;
            }
            if matches!(n.kind, NodeKind::AsyncFree { .. }) {
                frees.push((n.name.clone(), alloc));
                continue;
            }
            match fusion_of(&n.name) {
                Some(g) if temps.get(&alloc).is_none_or(|t| *t == g) => {
                    temps.insert(alloc, g);
                }
                _ => {
                    spoiled.insert(alloc);
                }
            }
        }
    }
    temps.retain(|alloc, _| !spoiled.contains(alloc));
    for (free, alloc) in frees {
        if let Some(g) = temps.get(&alloc).cloned() {
            if !in_b.contains(free.as_str()) {
                temps.insert(free, g);
            }
        }
    }
    f.temporaries = temps;
    f
}

#[cfg(test)]
mod tests {
    use super::split;
    use std::collections::BTreeSet;

    #[test]
    fn fused_kernel_names_split_into_member_names() {
        let set: BTreeSet<&str> = ["k0", "k1", "s.a", "s", "a.k2"].into_iter().collect();
        let names = |w: &str| set.contains(w);
        assert_eq!(split("k0.k1", &names), Some((vec!["k0", "k1"], false)));
        // Dotted names: the split that uses up the whole name wins.
        assert_eq!(split("s.a.k2", &names), Some((vec!["s", "a.k2"], false)));
        assert_eq!(split("k0.s.a", &names), Some((vec!["k0", "s.a"], false)));
        assert_eq!(split("k0.k1.1", &names), Some((vec!["k0", "k1"], false)));
        assert_eq!(split("k0.$3more", &names), Some((vec!["k0"], true)));
        assert_eq!(split("k0.zz", &names), None);
        assert_eq!(split("$3more", &names), None);
    }
}
