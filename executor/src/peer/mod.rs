//! Hand-recorded peers: the same device work the executor records, written directly against
//! ash the way a careful Vulkan programmer would, so benchmarks can report the executor
//! against the hardware's floor in the same process (docs/performance.md).
//!
//! Nothing here is used by the executor itself.
#![allow(unsafe_code)]

pub mod dispatch;
pub mod stamps;
pub mod transfer;

use crate::error::Result;
use crate::vk::Context;
use ash::vk;

/// Device nanoseconds from query 0 to query 1 of a two-timestamp pool, or `None` while
/// either is unavailable.
///
/// # Safety
/// `pool` is a live timestamp pool of `ctx`'s device with at least two queries, and the
/// submissions that wrote them have completed (their fence or semaphore was waited for).
pub(crate) unsafe fn elapsed_ns(ctx: &Context, pool: vk::QueryPool) -> Result<Option<u64>> {
    let mut data = [[0u64; 2]; 2];
    // SAFETY: the caller's contract.
    unsafe {
        ctx.device.get_query_pool_results(
            pool,
            0,
            &mut data,
            vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WITH_AVAILABILITY,
        )
    }?;
    if data.iter().any(|[_, avail]| *avail == 0) {
        return Ok(None);
    }
    let bits = ctx.timestamp_bits;
    let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let ticks = (data[1][0] & mask).wrapping_sub(data[0][0] & mask) & mask;
    Ok(Some((ticks as f64 * f64::from(ctx.props.limits.timestamp_period)) as u64))
}
