"""The f32 collectives of arith32 (scripts/gpu-subgroups/run.sh) from a device's own outputs,
at subgroup size 32: each result bit-exact with the interpreter's order (lane by lane from the
identity), or else within docs/ir.md's bound for some other order ((m-1)·2^-24·Σ|x| for add,
relative for mul, doubled: both sides round); min/max must be bit-exact. Also which order
matches the device's add reductions: lane by lane, a butterfly, or a pairwise tree."""
import struct, sys, math
R = sys.argv[1].rstrip('/') + '/'
def f32(x): return struct.unpack('<f', struct.pack('<f', x))[0] if math.isfinite(x) and abs(x) < 3.5e38 else (math.copysign(math.inf, x) if not math.isnan(x) else x)
def load(name, fmt, n): return list(struct.unpack(f'<{n}{fmt}', open(R + name, 'rb').read()))
N = 192
fx = load('arith32.fx.vk', 'f', N)
launch = {'a': ((192,), (64,)), 'b': ((192,), (48,)), 'c': ((32, 6), (32, 3)), 'd': ((64, 3), (64, 3))}
def subgroups(glob, loc, S=32):
    sg = {}
    dims = len(glob)
    for at in range(N):
        gid = [at] if dims == 1 else [at // glob[1], at % glob[1]]
        grp = tuple(g // l for g, l in zip(gid, loc))
        lid = [g % l for g, l in zip(gid, loc)]
        k = lid[0] + (loc[0] * lid[1] if dims == 2 else 0)
        sg.setdefault((grp, k // S), []).append((k % S, at))
    return [[at for _, at in sorted(v)] for v in sg.values()]
def seq(xs, op, ident):
    acc = ident; out = []
    for x in xs:
        out.append(acc); acc = f32(op(acc, x))
    return acc, out
def butterfly(xs, op):
    v = list(xs); n = len(v); s = 1
    while s < n:
        v = [f32(op(v[l], v[l ^ s])) if (l ^ s) < n else v[l] for l in range(n)]
        s *= 2
    return v[0]
def tree(xs, op):
    v = list(xs)
    while len(v) > 1:
        v = [f32(op(v[2*i], v[2*i+1])) if 2*i+1 < len(v) else v[2*i] for i in range((len(v)+1)//2)]
    return v[0]
add = lambda a, b: a + b; mul = lambda a, b: a * b
stats = {}
u = 2.0 ** -24
for s, (glob, loc) in launch.items():
    out = load(f'arith32.of_{s}.vk', 'f', N * 12)
    for lanes in subgroups(glob, loc):
        xs = [fx[l] for l in lanes]; n = len(xs)
        for oi, (name, op, ident) in enumerate([('add', add, 0.0), ('mul', mul, 1.0), ('min', min, math.inf), ('max', max, -math.inf)]):
            red, excl = seq(xs, op, ident)
            incl = excl[1:] + [red]
            for k, at in enumerate(lanes):
                got = out[at * 12 + oi * 3: at * 12 + oi * 3 + 3]
                for c, want in enumerate([red, incl[k], excl[k]]):
                    key = (name, ['reduce', 'incl', 'excl'][c])
                    st = stats.setdefault(key, [0, 0, 0, 0.0])
                    st[0] += 1
                    if got[c] == want or (got[c] != got[c] and want != want): st[1] += 1
                    else:
                        # within the documented bound?
                        m = k + 1 if c == 1 else (k if c == 2 else n)
                        part = xs[:m]
                        if name == 'add': bound = 2 * max(m - 1, 0) * u * sum(abs(x) for x in part)
                        elif name == 'mul':
                            p = 1.0
                            for x in part: p *= x
                            bound = 2 * max(m - 1, 0) * u * abs(p) + 2.0 ** -126
                        else: bound = 0
                        d = abs(got[c] - want) if math.isfinite(got[c]) and math.isfinite(want) else math.inf
                        if d <= bound: st[2] += 1
                        st[3] = max(st[3], d / bound if bound else math.inf)
        # order hypotheses for reductions (add)
        r = out[lanes[0] * 12]
        for h, f in [('seq', lambda: seq(xs, add, 0.0)[0]), ('butterfly', lambda: butterfly(xs, add)), ('tree', lambda: tree(xs, add))]:
            stats.setdefault(('order add reduce', h), [0, 0, 0, 0])
            stats[('order add reduce', h)][0] += 1
            stats[('order add reduce', h)][1] += (f() == r)
for k, v in sorted(stats.items()):
    print(k, 'total', v[0], 'bit-exact', v[1], 'else within bound', v[2], 'worst diff/bound %.3g' % v[3] if len(v) > 3 else '')
bad = [k for k, v in stats.items() if k[0] in ('add', 'mul', 'min', 'max') and v[1] + v[2] != v[0]]
if bad:
    print('OUTSIDE THE RULES:', bad)
    sys.exit(1)
