//! What the launch geometry says about the work-item builtins.

use super::interval::Interval;
use crate::graph::Launch;
use crate::kernel::Builtin;

/// Whether some global size is zero (such a launch runs no work-item).
pub(super) fn launch_is_empty(launch: &Launch) -> bool {
    match launch {
        Launch::SingleTask => false,
        Launch::Range(global) | Launch::NdRange { global, .. } => global.contains(&0),
    }
}

/// The interval of a work-item builtin under `launch` (the result type, `u32`, is checked
/// by the caller). Dimensions the launch does not have read as id 0 and size 1.
pub(super) fn builtin(launch: &Launch, b: Builtin, d: u8) -> Option<Interval> {
    let d = usize::from(d);
    if d > 2 {
        return None;
    }
    let size = |n: u64| Some(Interval::exact(n.into()));
    // Ids in 0..n (n >= 1: empty launches never get here).
    let ids = |n: u64| Interval::new(0, i128::from(n) - 1);
    if d >= launch.dims() {
        return match b {
            Builtin::GlobalId | Builtin::LocalId | Builtin::GroupId => ids(1),
            Builtin::GlobalRange | Builtin::LocalRange | Builtin::GroupRange => size(1),
        };
    }
    match launch {
        Launch::SingleTask => None,
        Launch::Range(global) => {
            let g = *global.get(d)?;
            // The work-group size of a `range` launch is chosen at compile time; local and
            // group ids still stay below the global size, their ranges are unknown.
            match b {
                Builtin::GlobalId | Builtin::LocalId | Builtin::GroupId => ids(g),
                Builtin::GlobalRange => size(g),
                Builtin::LocalRange | Builtin::GroupRange => None,
            }
        }
        Launch::NdRange { global, local, offset } => {
            let g = *global.get(d)?;
            let l = *local.get(d).filter(|&&l| l > 0)?;
            let off = if offset.is_empty() { 0 } else { *offset.get(d)? };
            let groups = g.div_ceil(l);
            match b {
                Builtin::GlobalId => ids(g)?.add(Interval::exact(off.into())),
                Builtin::LocalId => ids(l),
                Builtin::GroupId => ids(groups),
                Builtin::GlobalRange => size(g),
                Builtin::LocalRange => size(l),
                Builtin::GroupRange => size(groups),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_builtins_follow_the_launch() {
        let nd = Launch::NdRange { global: vec![64, 8], local: vec![16, 8], offset: vec![100, 0] };
        assert_eq!(builtin(&nd, Builtin::GlobalId, 0), Interval::new(100, 163));
        assert_eq!(builtin(&nd, Builtin::LocalId, 0), Interval::new(0, 15));
        assert_eq!(builtin(&nd, Builtin::GroupId, 0), Interval::new(0, 3));
        assert_eq!(builtin(&nd, Builtin::GroupRange, 1), Interval::new(1, 1));
        assert_eq!(builtin(&nd, Builtin::GlobalId, 2), Interval::new(0, 0));
        let r = Launch::Range(vec![10]);
        assert_eq!(builtin(&r, Builtin::LocalRange, 0), None);
        assert_eq!(builtin(&r, Builtin::GlobalRange, 1), Interval::new(1, 1));
        assert_eq!(builtin(&Launch::SingleTask, Builtin::GlobalId, 0), Interval::new(0, 0));
        assert_eq!(builtin(&r, Builtin::GlobalId, 3), None);
    }
}
