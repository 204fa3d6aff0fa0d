//! Launch geometry: which work-items run, grouped how, with which ids.
//!
//! `nd_range` launches run their real work-groups, one at a time, in linear group order
//! (last dimension fastest, as SYCL linearises ids). `range` and `single_task` launches have
//! no work-groups a kernel can observe, so the interpreter cuts the linearised range into
//! chunks of [`RANGE_CHUNK`] work-items; kernels launched that way may not use local
//! memory, barriers or the local/group builtins (checked before the launch).

/// Work-items per chunk of a `range` launch.
pub const RANGE_CHUNK: u64 = 256;
/// Largest work-group the interpreter runs.
pub const MAX_GROUP: u64 = 1 << 16;

/// The shape of a launch, every array padded to three dimensions (size 1, id 0).
#[derive(Clone, Debug)]
pub(crate) struct Geometry {
    /// Number of dimensions the launch wrote (1 for `single_task`).
    pub dims: usize,
    /// Global size.
    pub global: [u64; 3],
    /// Work-group size (`nd_range` only; for `range` the chunking is internal).
    pub local: [u64; 3],
    /// Global offset.
    pub offset: [u64; 3],
    /// Whether this is an `nd_range` launch.
    pub nd: bool,
}

/// The ids of the work-items of one group.
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupIds {
    /// Number of work-items.
    pub n: usize,
    /// Global id (offset included) per dimension per work-item.
    pub gid: [Vec<u64>; 3],
    /// Local id per dimension per work-item.
    pub lid: [Vec<u64>; 3],
    /// The group's id.
    pub group: [u64; 3],
}

impl Geometry {
    /// Builds the geometry of a launch, or says what is wrong with it.
    pub fn new(launch: &cmdgraph_ir::graph::Launch) -> Result<Geometry, String> {
        use cmdgraph_ir::graph::Launch;
        let pad = |v: &[u64], fill: u64| -> [u64; 3] {
            let mut a = [fill; 3];
            for (slot, x) in a.iter_mut().zip(v) {
                *slot = *x;
            }
            a
        };
        let geo = match launch {
            Launch::SingleTask => Geometry { dims: 1, global: [1; 3], local: [1; 3], offset: [0; 3], nd: false },
            Launch::Range(r) => {
                if r.is_empty() || r.len() > 3 {
                    return Err(format!("range has {} dimensions; 1 to 3 are allowed", r.len()));
                }
                Geometry { dims: r.len(), global: pad(r, 1), local: [1; 3], offset: [0; 3], nd: false }
            }
            Launch::NdRange { global, local, offset } => {
                if global.is_empty() || global.len() > 3 {
                    return Err(format!("nd_range has {} dimensions; 1 to 3 are allowed", global.len()));
                }
                if local.len() != global.len() || !(offset.is_empty() || offset.len() == global.len()) {
                    return Err("nd_range global, local and offset have different dimensions".to_string());
                }
                for (d, (&g, &l)) in global.iter().zip(local).enumerate() {
                    if l == 0 || g % l != 0 {
                        return Err(format!("global size {g} is not a multiple of local size {l} in dimension {d}"));
                    }
                }
                Geometry {
                    dims: global.len(),
                    global: pad(global, 1),
                    local: pad(local, 1),
                    offset: pad(offset, 0),
                    nd: true,
                }
            }
        };
        for d in 0..3 {
            if geo.offset[d].checked_add(geo.global[d]).is_none_or(|end| end > 1 << 32) {
                return Err(format!("dimension {d} exceeds the u32 range of the id builtins"));
            }
        }
        let total = geo.total().ok_or_else(|| "the launch has more work-items than fit in 64 bits".to_string())?;
        // The verifier's E0209: past this no kernel can index its work-items.
        if total > cmdgraph_ir::graph::MAX_LAUNCH_WORK_ITEMS {
            return Err(format!(
                "{total} work-items exceed the bound of {} per launch",
                cmdgraph_ir::graph::MAX_LAUNCH_WORK_ITEMS
            ));
        }
        if geo.nd && geo.group_size() > MAX_GROUP {
            return Err(format!(
                "work-group of {} work-items exceeds the interpreter's limit of {MAX_GROUP}",
                geo.group_size()
            ));
        }
        Ok(geo)
    }

    /// Number of work-items.
    pub fn total(&self) -> Option<u64> {
        self.global.iter().try_fold(1u64, |acc, &g| acc.checked_mul(g))
    }

    /// Work-items per group (`nd_range`) or per chunk (`range`).
    pub fn group_size(&self) -> u64 {
        if self.nd {
            self.local.iter().product()
        } else {
            RANGE_CHUNK.min(self.total().unwrap_or(0))
        }
    }

    /// Number of groups per dimension (`nd_range`).
    pub fn groups(&self) -> [u64; 3] {
        let mut g = [1; 3];
        for ((slot, global), local) in g.iter_mut().zip(self.global).zip(self.local) {
            *slot = global / local.max(1);
        }
        g
    }

    /// Number of groups (or chunks) the launch runs.
    pub fn group_count(&self) -> u64 {
        if self.nd {
            self.groups().iter().product()
        } else {
            self.total().unwrap_or(0).div_ceil(RANGE_CHUNK)
        }
    }

    /// The ids of group (or chunk) number `g`, reusing `ids`' vectors.
    pub fn fill_ids(&self, g: u64, ids: &mut GroupIds) {
        if self.nd {
            let groups = self.groups();
            ids.group = delinearize(g, &groups);
            let n = self.group_size();
            ids.n = n as usize;
            // Local ids are the same in every group: compute them once.
            if ids.lid[0].len() != ids.n {
                for d in 0..3 {
                    ids.lid[d].clear();
                }
                for l in 0..n {
                    for (d, &x) in delinearize(l, &self.local).iter().enumerate() {
                        ids.lid[d].push(x);
                    }
                }
            }
            for d in 0..3 {
                let base = self.offset[d] + ids.group[d] * self.local[d];
                let (gid, lid) = (&mut ids.gid[d], &ids.lid[d]);
                gid.clear();
                gid.extend(lid.iter().map(|&x| base + x));
            }
        } else {
            let total = self.total().unwrap_or(0);
            let first = g * RANGE_CHUNK;
            let last = (first + RANGE_CHUNK).min(total);
            ids.group = [g, 0, 0];
            ids.n = (last - first) as usize;
            for d in 0..3 {
                ids.gid[d].clear();
                ids.lid[d].clear();
                ids.lid[d].resize(ids.n, 0);
            }
            // Count up from the first id with carries instead of dividing per work-item.
            let mut id = delinearize(first, &self.global);
            for _ in first..last {
                for (d, &x) in id.iter().enumerate() {
                    ids.gid[d].push(x);
                }
                for d in (0..3).rev() {
                    id[d] += 1;
                    if id[d] < self.global[d].max(1) {
                        break;
                    }
                    id[d] = 0;
                }
            }
        }
    }
}

/// Splits a linear index over `sizes` with the last dimension varying fastest.
fn delinearize(mut linear: u64, sizes: &[u64; 3]) -> [u64; 3] {
    let mut out = [0; 3];
    for d in (0..3).rev() {
        let s = sizes[d].max(1);
        out[d] = linear % s;
        linear /= s;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdgraph_ir::graph::Launch;

    #[test]
    fn nd_range_ids() {
        let geo =
            Geometry::new(&Launch::NdRange { global: vec![4, 6], local: vec![2, 3], offset: vec![10, 0] }).unwrap();
        assert_eq!(geo.group_count(), 4);
        let mut ids = GroupIds::default();
        geo.fill_ids(3, &mut ids);
        assert_eq!(ids.group, [1, 1, 0]);
        assert_eq!(ids.n, 6);
        // local (1, 2) is work-item 5: global (10 + 2 + 1, 3 + 2)
        assert_eq!((ids.gid[0][5], ids.gid[1][5]), (13, 5));
    }

    #[test]
    fn bad_launches_are_errors() {
        assert!(Geometry::new(&Launch::NdRange { global: vec![10], local: vec![3], offset: vec![] }).is_err());
        assert!(Geometry::new(&Launch::Range(vec![])).is_err());
        assert!(Geometry::new(&Launch::Range(vec![1 << 33])).is_err());
    }
}
