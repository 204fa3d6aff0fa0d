//! General `loop`s for the kernel fuzzer (docs/ir.md, "Ops").
//!
//! Every generated `loop` terminates within 8 rounds: a counter carried from 0 ends it once
//! it passes a data-dependent limit (`x & 7`), and a random condition computed in the body
//! may end it earlier (`again = more and cond`), so the trip count differs between the
//! work-items of a group. Random data is carried beside the counter. The body is divergent
//! control flow, so it holds no `group_barrier`, and atomics only where loops may hold them
//! (`GenOptions::loop_atomics`).

use super::{Ty, G, U32};

impl G<'_> {
    /// `%r_n, %r... = loop carry(%n = 0, %k = init, ...) { ...; yield %again, %n + 1, ... }`.
    pub(super) fn general_loop(&mut self) {
        let zero = self.const_u32(0);
        let one = self.const_u32(1);
        let x = self.val(U32);
        let seven = self.const_u32(7);
        let limit = self.fresh("v");
        self.emit(&format!("{limit} = and {x}, {seven}"));
        let ncarry = if self.chance(70) { 1 + self.rng.below(3) } else { 0 };
        let tys: Vec<Ty> = (0..ncarry).map(|_| self.random_ty()).collect();
        let inits: Vec<String> = tys.iter().map(|&t| self.val(t)).collect();
        let count = self.fresh("n");
        let carries: Vec<String> = tys.iter().map(|_| self.fresh("k")).collect();
        let count_out = self.fresh("r");
        let results: Vec<String> = tys.iter().map(|_| self.fresh("r")).collect();
        let pairs: Vec<String> = std::iter::once(format!("{count} = {zero}"))
            .chain(carries.iter().zip(&inits).map(|(c, i)| format!("{c} = {i}")))
            .collect();
        let outs: Vec<String> = std::iter::once(count_out.clone()).chain(results.iter().cloned()).collect();
        self.emit(&format!("{} = loop carry({}) {{", outs.join(", "), pairs.join(", ")));
        // A carried value that starts from constants may be folded like one (llvmpipe_safe).
        for (i, init) in inits.iter().enumerate() {
            if self.from_constants.contains(init) {
                self.from_constants.insert(carries[i].clone());
                self.from_constants.insert(results[i].clone());
            }
        }
        self.feat("general loop");
        if !tys.is_empty() {
            self.feat("general loop with carried data");
        }
        if self.depth > 0 {
            self.feat("nested control flow");
        }
        let saved = self.barrier_ok;
        self.barrier_ok = false;
        self.ind += 1;
        self.depth += 1;
        self.loops += 1;
        self.scopes.push(Vec::new());
        self.push(&count, U32);
        for (c, t) in carries.iter().zip(&tys) {
            self.push(c, *t);
        }
        let s = 1 + self.rng.below(5);
        self.block(s);
        if self.chance(50) {
            self.store_output();
        }
        let next = self.fresh("v");
        self.emit(&format!("{next} = add {count}, {one}"));
        let more = self.fresh("v");
        self.emit(&format!("{more} = le {next}, {limit}"));
        let again = if self.chance(50) {
            let c = self.cond();
            let a = self.fresh("v");
            self.emit(&format!("{a} = and {more}, {c}"));
            self.feat("general loop with a data-dependent exit");
            a
        } else {
            more
        };
        let nexts: Vec<String> = tys.iter().map(|&t| self.val(t)).collect();
        let yielded: Vec<String> = [again, next].into_iter().chain(nexts).collect();
        self.emit(&format!("yield {}", yielded.join(", ")));
        self.scopes.pop();
        self.loops -= 1;
        self.depth -= 1;
        self.ind -= 1;
        self.emit("}");
        self.push(&count_out, U32);
        for (n, t) in results.iter().zip(&tys) {
            self.push(n, *t);
        }
        self.barrier_ok = saved;
    }
}
