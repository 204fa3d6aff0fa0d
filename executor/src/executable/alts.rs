//! Kernel alternatives of `dynamic` nodes and the dynamic-parameter index
//! (docs/executor.md, "Updates: what re-records what").
//!
//! Every kernel alternative of a `dynamic` node is recorded at finalize in the node's stage,
//! each with its own argument block, descriptor set and indirect dispatch words; the
//! inactive ones dispatch (0, 0, 0) groups. Switching the active alternative rewrites two
//! indirect commands while the executable is idle, as a range update does, and re-records
//! nothing. The index from each dynamic parameter to the kernel resources whose command
//! names it lets `update_param` touch only those.
//!
//! A host-task alternative is no recorded command but a step of the run plan (plan.rs):
//! switching rebuilds the plan, whose host steps are resolved from the active alternative.

use super::{Executable, KKey, KNode};
use crate::error::{ExecError, Result};
use crate::exec::Executor;
use cmdgraph_ir::{Alternative, Arg, Handle, KernelCommand, NodeKind};

impl Executable {
    /// Whether `key` is the resources its node runs now.
    pub(crate) fn is_active(&self, key: KKey) -> bool {
        self.kernels.get(&key.0).is_some_and(|k| k.alt == key.1)
    }

    /// The resources `key`, active or not.
    pub(crate) fn knode(&self, key: KKey) -> Option<&KNode> {
        if self.is_active(key) {
            return self.kernels.get(&key.0);
        }
        key.1.and_then(|a| self.spare.get(&(key.0, a)))
    }

    /// Takes the resources `key` out (to be given back by [`put_knode`](Self::put_knode)).
    pub(crate) fn take_knode(&mut self, key: KKey) -> Result<KNode> {
        let k = if self.is_active(key) {
            self.kernels.remove(&key.0)
        } else {
            key.1.and_then(|a| self.spare.remove(&(key.0, a)))
        };
        k.ok_or_else(|| ExecError::Invalid("not a kernel node".into()))
    }

    /// Gives back resources taken by [`take_knode`](Self::take_knode).
    pub(crate) fn put_knode(&mut self, key: KKey, active: bool, k: KNode) {
        match (active, key.1) {
            (false, Some(a)) => {
                self.spare.insert((key.0, a), k);
            }
            _ => {
                self.kernels.insert(key.0, k);
            }
        }
    }

    /// Whether node `n` can switch to alternative `alt` without re-recording: both its
    /// current and its new alternative are kernel resources recorded at finalize.
    pub(crate) fn can_activate(&self, n: usize, alt: u32) -> bool {
        self.spare.contains_key(&(n, alt)) && self.kernels.get(&n).is_some_and(|k| k.alt.is_some())
    }

    /// Rebuilds the dynamic-parameter index from every command (after updates that rewrite
    /// many commands; O(kernels)).
    pub(crate) fn reindex(&mut self) {
        for u in &mut self.users {
            u.clear();
        }
        let keys: Vec<(KKey, Vec<usize>)> = self
            .kernels
            .iter()
            .map(|(&n, k)| ((n, k.alt), params(&k.cmd)))
            .chain(self.spare.iter().map(|(&(n, a), k)| ((n, Some(a)), params(&k.cmd))))
            .collect();
        for (key, ps) in keys {
            for p in ps {
                if let Some(u) = self.users.get_mut(p) {
                    u.insert(key);
                }
            }
        }
    }

    /// Moves `key`'s registrations from the parameters of `was` to those of its command now.
    pub(crate) fn reindex_key(&mut self, key: KKey, was: &KernelCommand) {
        for p in params(was) {
            if let Some(u) = self.users.get_mut(p) {
                u.remove(&key);
            }
        }
        let now = self.knode(key).map(|k| params(&k.cmd)).unwrap_or_default();
        for p in now {
            if let Some(u) = self.users.get_mut(p) {
                u.insert(key);
            }
        }
    }
}

/// The dynamic parameters (by index) a command names.
fn params(cmd: &KernelCommand) -> Vec<usize> {
    cmd.args
        .iter()
        .filter_map(|a| match a {
            Arg::Dyn(h) => Some(h.index()),
            Arg::Value(_) => None,
        })
        .collect()
}

impl Executor {
    /// Makes alternative `alt` of `dynamic` node `n` the one that runs (see
    /// [`Executable::can_activate`]): the old alternative's indirect command becomes
    /// (0, 0, 0) and the new one's is written from its launch. The new alternative runs its
    /// recorded command (as a re-recording switch would); only if an update had given its
    /// resources another work-group size (another pipeline) is its segment re-recorded.
    pub(crate) fn activate(&mut self, exe: &mut Executable, n: usize, alt: u32) -> Result<()> {
        let graph = &self.loaded.module.graphs[exe.graph];
        let h = Handle::from_usize(n).ok_or_else(|| ExecError::Ir("bad node".into()))?;
        let node = graph.nodes.try_get(h).ok_or_else(|| ExecError::Ir("bad node".into()))?;
        let recorded = match &node.kind {
            NodeKind::Dynamic { dcg } => {
                match graph.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(alt as usize)) {
                    Some(Alternative::Kernel(c)) => c.clone(),
                    _ => return Err(ExecError::Invalid(format!("%{}: alternative {alt} is not a kernel", node.name))),
                }
            }
            _ => return Err(ExecError::Invalid(format!("%{} is not a dynamic node", node.name))),
        };
        let key = (n, Some(alt));
        let (was_cmd, was_variant) = match exe.spare.get(&(n, alt)) {
            Some(k) => (k.cmd.clone(), k.variant),
            None => return Err(ExecError::Invalid(format!("%{}: alternative {alt} was not recorded", node.name))),
        };
        let variant = if was_cmd == recorded {
            was_variant
        } else {
            let kname = &self.loaded.module.kernels[recorded.kernel].name;
            self.variant_of(&graph.name, &node.name, Some(alt), kname, &recorded.launch)?
        };
        let new_pipeline = variant != was_variant;
        // Swap: the old resources become a spare dispatching nothing, the new ones active.
        let old = exe.kernels.remove(&n).ok_or_else(|| ExecError::Invalid("not a kernel node".into()))?;
        let old_key = (n, old.alt);
        let old_alt = old.alt.unwrap_or_default();
        let mut new = exe.spare.remove(&(n, alt)).ok_or_else(|| ExecError::Invalid("not a kernel node".into()))?;
        let segment = new.segment;
        new.cmd = recorded;
        new.variant = variant;
        let zero = exe.indirect.write(old.ind_off, &[0u8; 12]);
        exe.spare.insert((n, old_alt), old);
        exe.kernels.insert(n, new);
        let r = zero.and_then(|()| self.prepare_node(exe, n, new_pipeline)).and_then(|changed| {
            if new_pipeline || (changed && !self.ctx.update_after_bind) {
                self.record(exe, segment)
            } else {
                Ok(())
            }
        });
        if r.is_err() {
            // Back as it was: the old alternative active with its groups, the new one a spare.
            if let (Some(mut new), Some(old)) = (exe.kernels.remove(&n), exe.spare.remove(&(n, old_alt))) {
                new.cmd = was_cmd.clone();
                new.variant = was_variant;
                exe.spare.insert((n, alt), new);
                exe.kernels.insert(n, old);
                let _ = self.prepare_key(exe, old_key, false);
                let _ = self.prepare_key(exe, key, new_pipeline);
                if new_pipeline {
                    let _ = self.record(exe, segment);
                }
            }
        }
        exe.reindex_key(key, &was_cmd);
        r
    }

    /// Makes the group's active alternative (already set in `exe.active`) the host task its
    /// `dynamic` nodes `nodes` run: each forgets a command an individual update gave it (an
    /// alternative becomes active with its own command, as a kernel alternative does), and
    /// the run plan, which resolved the old alternative's callback and memory at finalize,
    /// is rebuilt. The executable is idle (the caller waited for its runs).
    pub(crate) fn activate_hosts(&self, exe: &mut Executable, nodes: &[usize]) {
        for n in nodes {
            exe.hosts.remove(n);
        }
        self.build_steps(exe);
    }
}
