//! `mpi` (issue 35): a 2-D Jacobi stencil split by rows over two MPI ranks, one GPU each,
//! its halos exchanged by communication nodes (docs/mpi.md), run as
//! `mpiexec -n 2 cmdgraph-bench mpi --from DIR`.
//!
//! Per step: one sweep and the exchange of the two boundary rows with the neighbour. Each
//! run of the graphs makes two steps (u to v, v to u). Measured in one call, per step:
//! - *one GPU*: the rank's S x S domain alone (no exchange), the weak-scaling baseline;
//! - *cmdgraph, two ranks*: 2S x S over two GPUs, the rank graphs `@step.r0`/`@step.r1` with
//!   `send`/`recv` nodes run by each executor's host-task thread over MPI; each sweep is
//!   split into its edge rows (next to the neighbour, after the halo arrives) and its inner
//!   rows (which need no halo), so the exchange runs while the inner rows are computed
//!   (docs/executor.md, "Host tasks and overlap");
//! - *hand-written MPI*: whole sweeps as graphs of their own, and between them the
//!   application reads the boundary rows back, exchanges them with `MPI_Send`/`MPI_Recv`
//!   through the same communicator, and writes the halos: what a program without
//!   communication nodes does (it could overlap too, with non-blocking MPI and a second
//!   queue: that is the work communication nodes take off it);
//! - *whole domain on one GPU*: 2S x S on rank 0's GPU (the strong-scaling baseline).
//!
//! Weak-scaling efficiency = one GPU's time per step / the two ranks' (target ≥ 0.85 for a
//! domain that fills a GPU). Outputs are checked: after the same number of steps the two
//! ranks' rows equal the hand-written run's and the whole domain's, bit for bit (the same
//! kernel on the same kind of GPU), rows next to the split and inside each half.

use super::harness::{self, Common, Phase};
use clap::Args as ClapArgs;
use std::fmt::Write as _;

/// Command-line arguments of `cmdgraph-bench mpi`.
#[derive(ClapArgs, Clone, Debug)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Domain sides S per GPU (S x S floats; the two ranks together 2S x S). The whole
    /// domain's arrays must fit one descriptor (4 GiB on the H200): S ≤ 23170.
    #[arg(long, value_delimiter = ',', default_values_t = [4096u32, 16384, 23040])]
    pub sizes: Vec<u32>,
    /// Runs of two steps each, timed.
    #[arg(long, default_value_t = 50)]
    pub steps: u32,
}

/// `@jacobi`: one sweep of consecutive rows. `%src` points one row above the first row
/// computed, `%dst` at it (so the stores' footprint is exactly the rows written), `%grow0` is
/// its global row. `@jacobi_edge`: one row next to a neighbour, whose row comes from `%halo`
/// (above it when `%above` is 1, below otherwise) instead of from `%src`; the row computed
/// also goes to `%out`, the host memory the neighbour's copy is sent from.
fn kernels() -> String {
    // Both kernels: whether (%grow, %col) is an interior point, then, inside, the average
    // of %vl, %vr, %vu, %vd with the centre %vc (the same operations in the same order, so
    // a row is the same bits whichever kernel computes it).
    const INTERIOR: &str = "  %last_c = sub %w, %one
  %last_r = sub %h, %one
  %has_u = gt %grow, %zero
  %has_d = lt %grow, %last_r
  %has_l = gt %col, %zero
  %has_r = lt %col, %last_c
  %in_rows = and %has_u, %has_d
  %in_cols = and %has_l, %has_r
  %interior = and %in_rows, %in_cols
  %next = if %interior -> f32 {
    %il = sub %c, %one
    %ir = add %c, %one
    %vl = load %src[%il]
    %vr = load %src[%ir]
";
    const SMOOTH: &str = "    %horiz = add %vl, %vr
    %vert = add %vu, %vd
    %around = add %horiz, %vert
    %half = const 0.5 : f32
    %eighth = const 0.125 : f32
    %centre = mul %vc, %half
    %smooth = fma %around, %eighth, %centre
    yield %smooth
  } else {
    yield %vc
  }
";
    format!(
        "kernel @jacobi(%src: buf<f32, read>, %dst: buf<f32, write>, %w: u32, %h: u32, %grow0: u32) {{
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %r = div %i, %w
  %col = rem %i, %w
  %grow = add %grow0, %r
  %c = add %i, %w
  %vc = load %src[%c]
{INTERIOR}    %id = add %c, %w
    %vu = load %src[%i]
    %vd = load %src[%id]
{SMOOTH}  store %dst[%i], %next
}}

kernel @jacobi_edge(%src: buf<f32, read>, %halo: buf<f32, read>, %dst: buf<f32, write>, %out: buf<f32, write>, %w: u32, %h: u32, %grow: u32, %above: u32) {{
  %col = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %c = add %col, %w
  %vc = load %src[%c]
{INTERIOR}    %up = eq %above, %one
    %vu = if %up -> f32 {{
      %hu = load %halo[%col]
      yield %hu
    }} else {{
      %su = load %src[%col]
      yield %su
    }}
    %vd = if %up -> f32 {{
      %id = add %c, %w
      %sd = load %src[%id]
      yield %sd
    }} else {{
      %hd = load %halo[%col]
      yield %hd
    }}
{SMOOTH}  store %dst[%col], %next
  store %out[%col], %next
}}
"
    )
}

/// A module of `ranks` ranks of `rows` rows each, `w` columns: per rank, `@step` (two sweeps
/// and their halo exchanges; `.rR` with more than one rank) and, for the hand-written peer,
/// `@uv` and `@vu` (one sweep each, no exchange).
///
/// Each rank's rows are local rows 1..=rows of `@u`/`@v`; in `@step` the rows its neighbours
/// own next to them arrive in `@hu`/`@hv` (the upper one first, then the lower one), memory
/// no sweep of the inner rows touches. A sweep is split as an overlapping program splits it:
/// the rows next to a neighbour (the *edge* rows) in kernels of their own that wait for the
/// halo, the others (the *inner* rows) in one kernel that does not, so the exchange runs while
/// the inner rows are computed. With one rank `@step` is two whole sweeps of `@jacobi`, the
/// same kernel as the inner rows'.
fn module(rows: u32, w: u32, ranks: u32) -> String {
    let h = rows * ranks;
    let n = u64::from(rows + 2) * u64::from(w);
    let mut s = format!("{}\nusm @u : f32[{n}]\nusm @v : f32[{n}]\n", kernels());
    // Halos in (`@hu`, `@hv`) and edge rows out (`@ou`, `@ov`): host memory, which the
    // communication nodes read and write through its mapping, with no transfer on the queue.
    for m in ["hu", "hv", "ou", "ov"] {
        let _ = writeln!(s, "usm @{m} : f32[{}] host", 2 * w);
    }
    let row = 4 * u64::from(w);
    for rank in 0..ranks {
        let suffix = if ranks == 1 { String::new() } else { format!(".r{rank}") };
        let row0 = rank * rows;
        let (up, down) = (rank > 0, rank + 1 < ranks);
        // Rows `first..=last` from `src` into `dst`.
        let sweep = |src: &str, dst: &str, first: u32, last: u32| {
            format!(
                "kernel @jacobi range({}) args(@{src} + {}, @{dst} + {}, {w}, {h}, {})",
                u64::from(last + 1 - first) * u64::from(w),
                u64::from(first - 1) * row,
                u64::from(first) * row,
                row0 + first - 1
            )
        };
        // The inner rows: all but those next to a neighbour (they need no halo).
        let (first, last) = (if up { 2 } else { 1 }, if down { rows - 1 } else { rows });
        let inner = |src: &str, dst: &str| sweep(src, dst, first, last);
        // Local row `lr`, next to the neighbour whose row is at `halo_at` in `@h{src}`.
        let edge = |src: &str, dst: &str, lr: u32, halo_at: u64| {
            format!(
                "kernel @jacobi_edge range({w}) args(@{src} + {}, @h{src} + {halo_at}, @{dst} + {}, @o{dst} + {halo_at}, {w}, {h}, {}, {})",
                u64::from(lr - 1) * row,
                u64::from(lr) * row,
                row0 + lr - 1,
                u32::from(lr == 1)
            )
        };
        // Edge rows: (local row, peer, tag of what goes to it, tag of what comes from it,
        // byte offset of the peer's row in the halo memory).
        let mut edges = Vec::new();
        if up {
            edges.push((1, rank.wrapping_sub(1), 0, 1, 0));
        }
        if down {
            edges.push((rows, rank + 1, 1, 0, row));
        }
        let _ = writeln!(s, "\ngraph @step{suffix} {{");
        // Sweep u → v: the exchange of u's edge rows runs while the inner rows are computed.
        for &(lr, peer, to_tag, from_tag, halo_at) in &edges {
            // u's edge row: also in `@ou`, where the previous run's second sweep (or the
            // application, before the first run: `edges_out`) put it.
            let _ = writeln!(s, "  %u_s{lr} = send @ou + {halo_at}, {row} to({peer}) tag({to_tag})");
            let _ = writeln!(s, "  %u_r{lr} = recv @hu + {halo_at}, {row} from({peer}) tag({from_tag})");
            let _ = writeln!(s, "  %u_e{lr} = {} after(%u_r{lr})", edge("u", "v", lr, halo_at));
        }
        let _ = writeln!(s, "  %u_in = {}", inner("u", "v"));
        // Sweep v → u: v's edge rows go out once computed, while v → u's inner rows are.
        let u_edges: Vec<String> = edges.iter().map(|e| format!("%u_e{}", e.0)).collect();
        for &(lr, peer, to_tag, from_tag, halo_at) in &edges {
            let _ =
                writeln!(s, "  %v_s{lr} = send @ov + {halo_at}, {row} to({peer}) tag({}) after(%u_e{lr})", to_tag + 2);
            let _ = writeln!(
                s,
                "  %v_r{lr} = recv @hv + {halo_at}, {row} from({peer}) tag({}) after(%u_e{lr})",
                from_tag + 2
            );
            // Reads v's rows next to it (the inner kernel's and its own edge's); writes the
            // `@ou` row that %u_s sent.
            let _ =
                writeln!(s, "  %v_e{lr} = {} after(%v_r{lr}, %u_in, %u_e{lr}, %u_s{lr})", edge("v", "u", lr, halo_at));
        }
        let mut reads_v = u_edges.clone();
        reads_v.push("%u_in".into());
        let _ = writeln!(s, "  %v_in = {} after({})\n}}", inner("v", "u"), reads_v.join(", "));
        // The hand-written peer's whole sweep reads the halos from the rows around the rank's
        // (local rows 0 and rows + 1), where its exchange writes them.
        let whole = |src: &str, dst: &str| sweep(src, dst, 1, rows);
        let _ = writeln!(s, "\ngraph @uv{suffix} {{\n  %s = {}\n}}", whole("u", "v"));
        let _ = writeln!(s, "\ngraph @vu{suffix} {{\n  %s = {}\n}}", whole("v", "u"));
    }
    s
}

fn compile(text: &str) -> Result<Vec<u8>, String> {
    let (bundle, _) = harness::compile(text, cmdgraph_passes::DEFAULT_PIPELINE)?;
    bundle.to_bytes().map_err(|e| e.to_string())
}

/// The initial value at (global row, column): full-precision floats in [-1, 1).
#[cfg(any(test, feature = "mpi"))]
fn initial(row: u64, col: u64) -> f32 {
    let mut x = (row << 32 | col).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// What `@ou` holds for field `u` (rows local rows between halos, `w` wide): its first and
/// last rows, the edge rows the first exchange of a run sends.
#[cfg(any(test, feature = "mpi"))]
fn edges_out(u: &[f32], rows: u32, w: u32) -> Vec<f32> {
    let (w, rows) = (w as usize, rows as usize);
    let mut out = u[w..2 * w].to_vec();
    out.extend_from_slice(&u[rows * w..(rows + 1) * w]);
    out
}

/// Rows `first..first + rows` of the domain between zero halos, `w` wide.
#[cfg(any(test, feature = "mpi"))]
fn field(first: u32, rows: u32, w: u32) -> Vec<f32> {
    let w64 = u64::from(w);
    let mut u = vec![0.0f32; (rows as usize + 2) * w as usize];
    for r in 0..u64::from(rows) {
        let at = ((r + 1) * w64) as usize;
        for c in 0..w64 {
            u[at + c as usize] = initial(u64::from(first) + r, c);
        }
    }
    u
}

pub fn main(args: &Args) -> Result<(), String> {
    let phase = Phase::of(&args.common, "mpi")?;
    let r = run(args, &phase);
    phase.cleanup();
    r
}

fn run(args: &Args, phase: &Phase) -> Result<(), String> {
    if phase.prepares() {
        for &s in &args.sizes {
            harness::write_bytes(&phase.dir().join(format!("one_{s}.cgb")), &compile(&module(s, s, 1))?)?;
            harness::write_bytes(&phase.dir().join(format!("whole_{s}.cgb")), &compile(&module(2 * s, s, 1))?)?;
            harness::write_bytes(&phase.dir().join(format!("two_{s}.cgb")), &compile(&module(s, s, 2))?)?;
        }
    }
    if !phase.runs() {
        return Ok(());
    }
    ranks::run(args, phase)
}

#[cfg(not(feature = "mpi"))]
mod ranks {
    /// Without MPI the suite only prepares its bundles.
    pub fn run(_args: &super::Args, _phase: &super::Phase) -> Result<(), String> {
        Err("mpi: this cmdgraph-bench was built without MPI (`cargo build -p cmdgraph-bench --features mpi`); \
             run it as `mpiexec -n 2 cmdgraph-bench mpi`"
            .into())
    }
}

#[cfg(feature = "mpi")]
mod ranks {
    use super::super::harness::{self, Phase};
    use super::{edges_out, field, Args};
    use cmdgraph_executor::{ContextOptions, DeviceChoice, DeviceKind, ExecId, Executor};
    use cmdgraph_ir::comm::{Communicator, ReduceOp, SharedCommunicator};
    use cmdgraph_ir::types::ScalarType;
    use cmdgraph_mpi::MpiCommunicator;
    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    struct Rank {
        rank: u32,
        comm: SharedCommunicator,
        device: DeviceChoice,
    }

    impl Rank {
        fn lock(&self) -> Result<std::sync::MutexGuard<'_, dyn Communicator + 'static>, String> {
            self.comm.lock().map_err(|_| "communicator poisoned".to_string())
        }

        /// The largest of the ranks' `x` (also a barrier).
        fn max(&self, x: f64) -> Result<f64, String> {
            let mut b = x.to_le_bytes().to_vec();
            self.lock()?.allreduce("bench", ReduceOp::Max, ScalarType::F64, &mut b).map_err(|e| e.to_string())?;
            Ok(f64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])))
        }

        fn executor(&self, bundle: &[u8]) -> Result<Executor, String> {
            let loaded = cmdgraph_executor::load_bytes(bundle).map_err(|e| e.to_string())?;
            let opts = ContextOptions { validation: false, device: self.device.clone(), ..Default::default() };
            Executor::new(loaded, &opts).map_err(|e| e.to_string())
        }
    }

    fn err(e: cmdgraph_executor::ExecError) -> String {
        e.to_string()
    }

    /// Runs `one` (a run of two steps) for about half a second, so that the GPU's clocks
    /// are up before anything is timed.
    /// The ranks agree after each batch of runs whether to go on, so that both run as many
    /// (their messages pair up run for run).
    fn warm(me: &Rank, one: &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> {
        let t = Instant::now();
        loop {
            for _ in 0..4 {
                one()?;
            }
            if me.max(t.elapsed().as_secs_f64())? >= 0.5 {
                return Ok(());
            }
        }
    }

    /// Seconds per run: the median of three times `runs` runs of `one` (the last waiting
    /// for the device), the slower rank's; after warming up.
    fn median_of(me: &Rank, runs: u32, one: &mut dyn FnMut(bool) -> Result<(), String>) -> Result<f64, String> {
        warm(me, &mut || one(true))?;
        let mut times = Vec::new();
        for _ in 0..3 {
            me.max(0.0)?;
            let t = Instant::now();
            for i in 0..runs {
                one(i + 1 == runs)?;
            }
            times.push(me.max(t.elapsed().as_secs_f64() / f64::from(runs))?);
        }
        Ok(harness::median(&times))
    }

    /// [`median_of`] for graph `exec` run on `ex` (asynchronously, waited for at the end),
    /// then `@u` bound again to `u0` and `runs` runs made, so that every configuration's
    /// outputs are those of the same number of steps from the same field.
    fn timed(me: &Rank, ex: &mut Executor, exec: ExecId, (u0, w): (&[f32], u32), runs: u32) -> Result<f64, String> {
        let t = median_of(me, runs, &mut |last| {
            ex.run(exec).map_err(err)?;
            if last {
                ex.wait(exec).map_err(err)?;
            }
            Ok(())
        })?;
        ex.wait(exec).map_err(err)?;
        bind_field(ex, u0, w)?;
        for _ in 0..runs {
            ex.run(exec).map_err(err)?;
        }
        ex.wait(exec).map_err(err)?;
        Ok(t)
    }

    /// [`timed`] on this rank alone (no barriers).
    fn solo_timed(ex: &mut Executor, exec: ExecId, (u0, w): (&[f32], u32), runs: u32) -> Result<f64, String> {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(500) {
            ex.run(exec).map_err(err)?;
            ex.wait(exec).map_err(err)?;
        }
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            for _ in 0..runs {
                ex.run(exec).map_err(err)?;
            }
            ex.wait(exec).map_err(err)?;
            times.push(t.elapsed().as_secs_f64() / f64::from(runs));
        }
        bind_field(ex, u0, w)?;
        for _ in 0..runs {
            ex.run(exec).map_err(err)?;
        }
        ex.wait(exec).map_err(err)?;
        Ok(harness::median(&times))
    }

    /// Binds field `u0` (`w` wide) to `@u`, and its edge rows to `@ou`, from where the first
    /// exchange of a run sends them.
    fn bind_field(ex: &mut Executor, u0: &[f32], w: u32) -> Result<(), String> {
        let rows = (u0.len() / w as usize).saturating_sub(2) as u32;
        ex.bind_as("u", u0).map_err(err)?;
        ex.bind_as("ou", &edges_out(u0, rows, w)).map_err(err)
    }

    /// Rows `rows` (local, 0 the upper halo) of `mem`, `w` wide.
    fn rows_of(ex: &Executor, mem: &str, w: u32, rows: &[u32]) -> Result<Vec<f32>, String> {
        let mut out = Vec::new();
        for &r in rows {
            let mut b = vec![0u8; 4 * w as usize];
            ex.read_range_into(mem, 4 * u64::from(r) * u64::from(w), &mut b).map_err(err)?;
            out.extend(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        }
        Ok(out)
    }

    /// The hand-written exchange of `mem`'s boundary rows with the neighbour, into the halo
    /// rows around the rank's own.
    fn exchange(me: &Rank, ex: &mut Executor, mem: &str, s: u32, tags: (u32, u32)) -> Result<(), String> {
        let row = 4 * u64::from(s);
        let mut halo = vec![0u8; row as usize];
        let mut edge = vec![0u8; row as usize];
        let mut c = me.lock()?;
        if me.rank == 0 {
            ex.read_range_into(mem, u64::from(s) * row, &mut edge).map_err(err)?;
            c.send("hand", 1, tags.1, &edge).map_err(|e| e.to_string())?;
            c.recv("hand", 1, tags.0, &mut halo).map_err(|e| e.to_string())?;
            drop(c);
            ex.write_range(mem, u64::from(s + 1) * row, &halo).map_err(err)
        } else {
            ex.read_range_into(mem, row, &mut edge).map_err(err)?;
            c.send("hand", 0, tags.0, &edge).map_err(|e| e.to_string())?;
            c.recv("hand", 0, tags.1, &mut halo).map_err(|e| e.to_string())?;
            drop(c);
            ex.write_range(mem, 0, &halo).map_err(err)
        }
    }

    pub fn run(args: &Args, phase: &Phase) -> Result<(), String> {
        let mpi = MpiCommunicator::init(Duration::from_secs(600)).map_err(|e| e.to_string())?;
        let (rank, size) = (mpi.rank(), mpi.size());
        if size != 2 {
            return Err(format!("mpi: run as two ranks (`mpiexec -n 2`), not {size}"));
        }
        let gpus: Vec<_> = cmdgraph_executor::vulkan_devices()
            .unwrap_or_default()
            .into_iter()
            .filter(|d| d.kind == DeviceKind::DiscreteGpu)
            .collect();
        let device = gpus.get(rank as usize).map_or(DeviceChoice::Default, |g| DeviceChoice::Index(g.index));
        let me = Rank { rank, comm: Arc::new(Mutex::new(mpi)), device };
        let reps = args.steps;
        let mut rows = Vec::new();
        let mut device_names = Vec::new();
        for &s in &args.sizes {
            let u0 = field(rank * s, s, s);
            // One GPU, this rank's S x S alone.
            let mut one = me.executor(&harness::bundle_bytes(phase.dir(), &format!("one_{s}"))?)?;
            if device_names.is_empty() {
                device_names.push(one.context().device_name().to_string());
            }
            bind_field(&mut one, &u0, s)?;
            let e = one.finalize("step").map_err(err)?;
            let t_one = timed(&me, &mut one, e, (&u0, s), reps)?;
            drop(one);
            // Two ranks with communication nodes.
            let mut two = me.executor(&harness::bundle_bytes(phase.dir(), &format!("two_{s}"))?)?;
            two.set_communicator(&me.comm);
            bind_field(&mut two, &u0, s)?;
            let e = two.finalize(&format!("step.r{rank}")).map_err(err)?;
            let t_two = timed(&me, &mut two, e, (&u0, s), reps)?;
            // The rows to check: next to the split and inside.
            let check: Vec<u32> = vec![1, 2, s / 2, s - 1, s];
            let got = rows_of(&two, "u", s, &check)?;
            // The hand-written exchange around single-sweep graphs.
            two.bind_as("u", &u0).map_err(err)?;
            let uv = two.finalize(&format!("uv.r{rank}")).map_err(err)?;
            let vu = two.finalize(&format!("vu.r{rank}")).map_err(err)?;
            let hand_step = |two: &mut Executor| -> Result<(), String> {
                exchange(&me, two, "u", s, (0, 1))?;
                two.run(uv).map_err(err)?;
                two.wait(uv).map_err(err)?;
                exchange(&me, two, "v", s, (2, 3))?;
                two.run(vu).map_err(err)?;
                two.wait(vu).map_err(err)
            };
            let t_hand = median_of(&me, reps, &mut |_| hand_step(&mut two))?;
            two.bind_as("u", &u0).map_err(err)?;
            for _ in 0..reps {
                hand_step(&mut two)?;
            }
            let hand = rows_of(&two, "u", s, &check)?;
            harness::same(&format!("mpi {s}: rank {rank}, graphs against the hand-written exchange"), &got, &hand)?;
            drop(two);
            // The whole 2S x S domain on rank 0's GPU, and rank 1's rows sent there to check.
            let mut t_whole = 0.0;
            if rank == 1 {
                let bytes: Vec<u8> = got.iter().flat_map(|v| v.to_le_bytes()).collect();
                me.lock()?.send("check", 0, 99, &bytes).map_err(|e| e.to_string())?;
            } else {
                let w0 = field(0, 2 * s, s);
                let mut whole = me.executor(&harness::bundle_bytes(phase.dir(), &format!("whole_{s}"))?)?;
                bind_field(&mut whole, &w0, s)?;
                let e = whole.finalize("step").map_err(err)?;
                // Rank 1 waits meanwhile (its next `max` is after the check).
                t_whole = solo_timed(&mut whole, e, (&w0, s), reps)?;
                let want0 = rows_of(&whole, "u", s, &check)?;
                let shifted: Vec<u32> = check.iter().map(|r| r + s).collect();
                let want1 = rows_of(&whole, "u", s, &shifted)?;
                harness::same(&format!("mpi {s}: rank 0 against the whole domain"), &got, &want0)?;
                let mut b = vec![0u8; 4 * got.len()];
                me.lock()?.recv("check", 1, 99, &mut b).map_err(|e| e.to_string())?;
                let other: Vec<f32> = b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                harness::same(&format!("mpi {s}: rank 1 against the whole domain"), &other, &want1)?;
            }
            me.max(0.0)?;
            // Per step: each run makes two.
            let step = |t: f64| t / 2.0;
            eprintln!(
                "mpi {s}: one GPU {:.3} ms/step, two ranks {:.3}, hand {:.3}, whole {:.3}",
                step(t_one) * 1e3,
                step(t_two) * 1e3,
                step(t_hand) * 1e3,
                step(t_whole) * 1e3
            );
            rows.push((s, step(t_one), step(t_two), step(t_hand), step(t_whole)));
        }
        if rank != 0 {
            return Ok(());
        }
        let mut body = harness::header(
            "mpi",
            &format!("two ranks (mpiexec -n 2), one GPU each: {}", device_names.join(", ")),
            &args.common,
            &format!("wall time per Jacobi step (a sweep and its halo exchange), the median of three times {reps} runs of two steps, after half a second of warm-up; the slower rank's"),
        );
        let _ = writeln!(body, "MPI: {}\n", MpiCommunicator::library_version().lines().next().unwrap_or(""));
        let _ = writeln!(body, "| S (each GPU S x S floats) | one GPU, S x S, ms/step | cmdgraph, two ranks, 2S x S, ms/step | weak-scaling efficiency | hand-written MPI exchange, ms/step | cmdgraph / hand | whole 2S x S on one GPU, ms/step | two GPUs' speedup on 2S x S |");
        let _ = writeln!(body, "|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (s, one, two, hand, whole) in &rows {
            let _ = writeln!(
                body,
                "| {s} | {:.3} | {:.3} | {:.2} | {:.3} | {:.2}x | {:.3} | {:.2}x |",
                one * 1e3,
                two * 1e3,
                one / two,
                hand * 1e3,
                two / hand,
                whole * 1e3,
                whole / two
            );
        }
        let _ = writeln!(
            body,
            "\nTarget: weak-scaling efficiency ≥ 0.85 at 2 ranks for a domain that fills a GPU. Every output checked: the two ranks' rows (next to the split and inside) equal the hand-written exchange's and the whole domain's on one GPU, bit for bit."
        );
        harness::finish(&args.common, "mpi", &body)
    }
}

#[cfg(test)]
mod tests {
    use super::{edges_out, field, module};
    use cmdgraph_interp::ranks::{simulate, Simulation};
    use cmdgraph_interp::{Interpreter, RunOptions};
    use cmdgraph_ir::bundle::Segment;
    use std::time::Duration;

    /// The split sweeps compute what one process computes: two ranks simulated by the
    /// interpreter (race detector on) against the whole domain, bit for bit, after three runs.
    #[test]
    fn two_ranks_give_the_whole_domain_bit_for_bit() {
        let (rows, w, runs) = (6u32, 9u32, 3u64);
        let two = cmdgraph_ir::text::parse(&module(rows, w, 2)).expect("parses");
        cmdgraph_ir::verify::verify(&two).map_err(|d| format!("{d:?}")).expect("verifies");
        let sim = Simulation {
            module: &two,
            graph: "step",
            size: 2,
            runs,
            options: RunOptions { check_races: true, ..RunOptions::default() },
            timeout: Duration::from_secs(20),
        };
        let ranks = simulate(&sim, &|rank, it| {
            let u = field(rank * rows, rows, w);
            it.bind_as("u", &u)?;
            it.bind_as("ou", &edges_out(&u, rows, w))
        });
        let whole_module = cmdgraph_ir::text::parse(&module(2 * rows, w, 1)).expect("parses");
        let mut whole = Interpreter::new(&whole_module).expect("interpreter");
        whole.bind_as("u", &field(0, 2 * rows, w)).expect("binds");
        let e = whole.finalize("step").expect("finalizes");
        for _ in 0..runs {
            whole.run(e).expect("runs");
        }
        let want: Vec<f32> = whole.read_as("u").expect("reads");
        let w = w as usize;
        for (rank, it) in ranks.into_iter().enumerate() {
            let got: Vec<f32> = it.expect("rank runs").read_as("u").expect("reads");
            let mine = &got[w..(rows as usize + 1) * w];
            let at = (rank * rows as usize + 1) * w;
            let theirs = &want[at..at + rows as usize * w];
            assert_eq!(
                mine.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                theirs.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "rank {rank}"
            );
        }
    }

    /// Each exchange waits only for the edge rows: the schedule puts the inner rows, which
    /// do not lead to it, in a segment of their own before it.
    #[test]
    fn each_exchange_is_scheduled_after_the_edge_rows_and_beside_the_inner_rows() {
        let m = cmdgraph_ir::text::parse(&module(6, 9, 2)).expect("parses");
        let g = m.graphs.iter().find(|(_, g)| g.name == "step.r0").map(|(_, g)| g).expect("@step.r0");
        let s = cmdgraph_codegen::schedule::schedule(g).expect("schedules");
        let dev = |names: &[&str]| Segment::Device { stages: vec![names.iter().map(|n| n.to_string()).collect()] };
        let host = |n: &str| Segment::Host { node: n.to_string() };
        assert_eq!(
            s,
            vec![
                dev(&["u_in"]),
                host("u_s6"),
                host("u_r6"),
                dev(&["u_e6"]),
                dev(&["v_in"]),
                host("v_s6"),
                host("v_r6"),
                dev(&["v_e6"]),
            ]
        );
    }
}
