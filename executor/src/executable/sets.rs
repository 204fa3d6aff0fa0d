//! Descriptor sets of an executable's kernel resources, from a few shared pools.
//!
//! One pool per node made every run's `vkQueueSubmit` grow with the node count on NVIDIA's
//! driver (0.72 ms for 10^4 nodes on an H200, against 0.04 ms for the same dispatches with
//! one pool, docs/performance.md "replay"): a submission pays for each pool its command
//! buffers reference. Sets are freed one by one (a new work-group size gives a node a set of
//! another layout), so pools allow freeing; a full or fragmented pool is followed by a new one.
#![allow(unsafe_code)]

use crate::error::Result;
use crate::vk::Context;
use ash::vk;

/// Sets a pool made after the first holds.
const CHUNK: u32 = 64;

/// The executable's descriptor pools.
#[derive(Default)]
pub(crate) struct SetPools {
    pools: Vec<vk::DescriptorPool>,
    /// Bindings per set the next pool is sized for (the largest layout seen).
    bindings: u32,
}

impl SetPools {
    /// No pool yet; pools are sized for sets of at most `bindings` bindings (more when a
    /// larger layout comes).
    pub(crate) fn new(bindings: u32) -> SetPools {
        SetPools { pools: Vec::new(), bindings: bindings.max(1) }
    }

    fn grow(&mut self, ctx: &Context, sets: u32) -> Result<vk::DescriptorPool> {
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: sets.saturating_mul(self.bindings),
        }];
        let mut flags = vk::DescriptorPoolCreateFlags::FREE_DESCRIPTOR_SET;
        if ctx.update_after_bind {
            flags |= vk::DescriptorPoolCreateFlags::UPDATE_AFTER_BIND;
        }
        let info = vk::DescriptorPoolCreateInfo::default().flags(flags).max_sets(sets).pool_sizes(&sizes);
        // SAFETY: a valid create info on a live device; the pool is kept until `destroy`.
        let pool = unsafe { ctx.device.create_descriptor_pool(&info, None) }?;
        self.pools.push(pool);
        Ok(pool)
    }

    /// A set of `layout` (`bindings` bindings) and the pool it came from. `first` sizes the
    /// first pool (the executable's number of kernel resources).
    pub(crate) fn allocate(
        &mut self,
        ctx: &Context,
        layout: vk::DescriptorSetLayout,
        bindings: u32,
        first: u32,
    ) -> Result<(vk::DescriptorPool, vk::DescriptorSet)> {
        let layouts = [layout];
        let try_pool = |pool: vk::DescriptorPool| {
            let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
            // SAFETY: the pool and layout are live.
            unsafe { ctx.device.allocate_descriptor_sets(&info) }.map(|s| s.first().copied().unwrap_or_default())
        };
        if bindings <= self.bindings {
            if let Some(&pool) = self.pools.last() {
                match try_pool(pool) {
                    Ok(set) => return Ok((pool, set)),
                    Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY | vk::Result::ERROR_FRAGMENTED_POOL) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.bindings = self.bindings.max(bindings);
        let size = if self.pools.is_empty() { first.max(1) } else { CHUNK };
        let pool = self.grow(ctx, size)?;
        Ok((pool, try_pool(pool)?))
    }

    /// Descriptor pools made so far.
    pub(crate) fn pools(&self) -> usize {
        self.pools.len()
    }

    /// Returns `set` to `pool`. Command buffers that recorded it must be re-recorded before
    /// their next submission (the caller's contract, as for any descriptor change).
    pub(crate) fn free(&self, ctx: &Context, pool: vk::DescriptorPool, set: vk::DescriptorSet) {
        if pool == vk::DescriptorPool::null() || set == vk::DescriptorSet::null() {
            return;
        }
        // SAFETY: `set` came from `pool` (FREE_DESCRIPTOR_SET) and no pending command buffer
        // uses it (the executable is idle when its sets change).
        let _ = unsafe { ctx.device.free_descriptor_sets(pool, &[set]) };
    }

    /// Destroys every pool (and with them every set); the executable is idle.
    pub(crate) fn destroy(&mut self, ctx: &Context) {
        for pool in self.pools.drain(..) {
            // SAFETY: no pending command buffer uses the executable's sets.
            unsafe { ctx.device.destroy_descriptor_pool(pool, None) };
        }
    }
}
