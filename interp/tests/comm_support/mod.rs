//! Modules for the communication tests (docs/mpi.md), shared by the interpreter's, the
//! executor's and the CLI's tests: a 2-D Jacobi stencil split by rows over ranks with halo
//! exchange, and an all-reduce of random floats.
#![allow(dead_code)]

/// A Jacobi problem of `h` x `w` floats split over `ranks` ranks by rows.
pub struct Jacobi {
    pub h: u32,
    pub w: u32,
    pub ranks: u32,
}

const KERNELS: &str = r#"
// One Jacobi sweep of this rank's rows: local row 0 and rows+1 are halos from the
// neighbouring ranks; %row0 is the global row of local row 1.
kernel @jacobi(%src: buf<f32, read>, %dst: buf<f32, write>, %w: u32, %h: u32, %row0: u32) {
  %r = global_id 0
  %col = global_id 1
  %zero = const 0 : u32
  %one = const 1 : u32
  %lr = add %r, %one
  %grow = add %row0, %r
  %base = mul %lr, %w
  %c = add %base, %col
  %vc = load %src[%c]
  %last_c = sub %w, %one
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
    %iu = sub %c, %w
    %id = add %c, %w
    %vl = load %src[%il]
    %vr = load %src[%ir]
    %vu = load %src[%iu]
    %vd = load %src[%id]
    %horiz = add %vl, %vr
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
  store %dst[%c], %next
}

// max |a - b| over this rank's rows into %err[0], as the bits of the float: for floats of
// one sign their bits order as they do (a u32 atomic max is native on every device, an f32
// one a compare-and-swap loop that llvmpipe may cut short).
kernel @residual(%a: buf<f32, read>, %b: buf<f32, read>, %err: buf<u32, read_write>, %w: u32) {
  %i = global_id 0
  %j = add %i, %w
  %va = load %a[%j]
  %vb = load %b[%j]
  %d = sub %va, %vb
  %ad = abs %d
  %bits = bitcast %ad to u32
  %zero = const 0 : u32
  %old = atomic max %err[%zero], %bits
}
"#;

impl Jacobi {
    /// Rows each rank owns.
    pub fn rows(&self) -> u32 {
        self.h / self.ranks
    }

    /// The module: kernels, memory, and graph `@step` (one rank) or `@step.r0`, ... .
    pub fn module(&self) -> String {
        let (w, h, rows) = (self.w, self.h, self.rows());
        let mut s = String::from(KERNELS);
        s.push_str(&format!(
            "\nusm @u : f32[{}]\nusm @v : f32[{}]\nusm @err : u32[1]\n",
            (rows + 2) * w,
            (rows + 2) * w
        ));
        for rank in 0..self.ranks {
            let name = if self.ranks == 1 { "step".to_string() } else { format!("step.r{rank}") };
            s.push_str(&format!("\ngraph @{name} {{\n"));
            let row0 = rank * rows;
            let row_bytes = 4 * w;
            let exchange = |s: &mut String, mem: &str, tags: (u32, u32), after: &str| -> Vec<String> {
                let mut waits = Vec::new();
                if rank > 0 {
                    s.push_str(&format!(
                        "  %{mem}_send_up = send @{mem} + {row_bytes}, {row_bytes} to({}) tag({}){after}\n",
                        rank - 1,
                        tags.0
                    ));
                    s.push_str(&format!(
                        "  %{mem}_recv_up = recv @{mem}, {row_bytes} from({}) tag({}){after}\n",
                        rank - 1,
                        tags.1
                    ));
                    waits.extend([format!("%{mem}_send_up"), format!("%{mem}_recv_up")]);
                }
                if rank + 1 < self.ranks {
                    let last = rows * row_bytes;
                    let halo = (rows + 1) * row_bytes;
                    s.push_str(&format!(
                        "  %{mem}_send_down = send @{mem} + {last}, {row_bytes} to({}) tag({}){after}\n",
                        rank + 1,
                        tags.1
                    ));
                    s.push_str(&format!(
                        "  %{mem}_recv_down = recv @{mem} + {halo}, {row_bytes} from({}) tag({}){after}\n",
                        rank + 1,
                        tags.0
                    ));
                    waits.extend([format!("%{mem}_send_down"), format!("%{mem}_recv_down")]);
                }
                waits
            };
            let after = |w: &[String]| if w.is_empty() { String::new() } else { format!(" after({})", w.join(", ")) };
            let u_waits = exchange(&mut s, "u", (0, 1), "");
            s.push_str(&format!(
                "  %s0 = kernel @jacobi range({rows}, {w}) args(@u, @v, {w}, {h}, {row0}){}\n",
                after(&u_waits)
            ));
            let v_waits = exchange(&mut s, "v", (2, 3), " after(%s0)");
            let mut s1_waits = v_waits.clone();
            s1_waits.push("%s0".into());
            s.push_str(&format!(
                "  %s1 = kernel @jacobi range({rows}, {w}) args(@v, @u, {w}, {h}, {row0}){}\n",
                after(&s1_waits)
            ));
            s.push_str("  %clear = memset @err, 0, 4\n");
            s.push_str(&format!(
                "  %res = kernel @residual range({}) args(@u, @v, @err, {w}) after(%s1, %clear)\n",
                rows * w
            ));
            if self.ranks > 1 {
                s.push_str("  %all = allreduce max @err, 4 after(%res)\n");
            }
            s.push_str("}\n");
        }
        s
    }

    /// Rank `rank`'s initial `@u`: its rows of `field` (`h` x `w`) between zero halos.
    pub fn initial(&self, field: &[f32], rank: u32) -> Vec<f32> {
        let (w, rows) = (self.w as usize, self.rows() as usize);
        let mut u = vec![0.0; (rows + 2) * w];
        let start = rank as usize * rows * w;
        u[w..(rows + 1) * w].copy_from_slice(&field[start..start + rows * w]);
        u
    }

    /// The rows rank `rank` owns, from its `@u`.
    pub fn owned<'a>(&self, u: &'a [f32]) -> &'a [f32] {
        let (w, rows) = (self.w as usize, self.rows() as usize);
        &u[w..(rows + 1) * w]
    }
}

/// `n` full-precision floats from `seed` (a 64-bit LCG): 24 random mantissa bits in
/// [-1, 1) times 2^e for e in -8..8, so sums round and their order shows.
pub fn random_f32(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let m = ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
            let e = ((x >> 20) & 15) as i32 - 8;
            m * 2f32.powi(e)
        })
        .collect()
}

/// A module whose graph `@sum` (run alike by every rank) all-reduces `@x` (`n` f32) with
/// `sum`, and `@m` (`n` i32) with `max`.
pub fn allreduce_module(n: u32) -> String {
    format!(
        "usm @x : f32[{n}]\nusm @m : i32[{n}]\n\ngraph @sum {{\n  %s = allreduce sum @x, {b}\n  %m = allreduce max @m, {b} after(%s)\n}}\n",
        b = 4 * n
    )
}

/// A graph placed by hand on two devices (a kernel on each, transfers both ways, a
/// replicated input), for `compile --ranks 2`: each device becomes a rank.
pub const PLACED: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

usm @w : f32[256] replicated
usm @a : f32[256]
usm @b : f32[256] home(1)
usm @out : f32[256]

graph @g {
  %k0 = kernel @axpy range(256) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 1024 after(%k0)
  %k1 = kernel @axpy range(256) args(@w, @b, 1.5) device(1) after(%t)
  %back = memcpy @out, @b, 1024 after(%k1)
  %k2 = kernel @axpy range(256) args(@a, @out, 0.5) after(%back)
}
";

/// [`PLACED`]'s memory objects that the runs change, each with the rank (device) it lives on.
pub const PLACED_HOMES: [(&str, u32); 3] = [("a", 0), ("b", 1), ("out", 0)];

/// Whether `got` matches `want` within the float rules of an `fma` rounded once or twice.
pub fn close(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs().max(1.0))
}
