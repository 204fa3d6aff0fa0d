// dotp.cpp: intel/llvm's SYCL graph end-to-end sample "dotp_device_mem"
// (sycl/test-e2e/Graph/Inputs/dotp_device_mem.cpp: the dot product of the sycl_ext_oneapi_graph
// specification's examples, built with the explicit API on device USM) ported to cmdgraph's
// C++ API (capi-build/include/cmdgraph_sycl.hpp; docs/capi.md, "Building graphs from C and
// C++").
//
// The graph, as in the sample:
//
//   init            x, y, z initialised on the device
//   node_a, node_b  after init: x = alpha*x + beta*y;  z = gamma*z + beta*y
//   node_c          after both: dotp += x . z, one work-item, in index order
//
// What the port changes: `namespace sycl = cmdgraph::sycl`; the four kernel lambdas are
// kernels written as text (init and node_c in cmdgraph's kernel language, node_a in WGSL,
// node_b in GLSL) and launched by name with their arguments; `init` copies full-precision
// random inputs read from files (the sample writes constants) so that the result checks
// something; dotp is zeroed with q.memset (the sample relies on it); the result is also
// compared with the same arithmetic on the host, bit for bit, as the sample's assert does.
//
// Usage: dotp DIR   reads DIR/inputs.bin (alpha, beta, gamma, then n values each of x, y and
// z as little-endian f32; n = 1024) and writes DIR/outputs.bin (dotp, then x and z after the
// run), DIR/graph.cgir (the executable graph's IR) and DIR/graph.cgb (its bundle, compiled in
// process). Exit status 0 when the device's dot product equals the host's.
#include <cmdgraph_sycl.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace sycl = cmdgraph::sycl;
namespace sycl_ext = cmdgraph::sycl::ext::oneapi::experimental;

static const size_t n = 1024;

// init: x, y, z from the inputs; node_c: dotp[0] += x[j] * z[j] for j in 0..n.
static const char *kernels = R"(
kernel @init(%x: buf<f32, write>, %y: buf<f32, write>, %z: buf<f32, write>,
             %x0: buf<f32, read>, %y0: buf<f32, read>, %z0: buf<f32, read>) {
  %i = global_id 0
  %a = load %x0[%i]
  %b = load %y0[%i]
  %c = load %z0[%i]
  store %x[%i], %a
  store %y[%i], %b
  store %z[%i], %c
}

kernel @dot(%dotp: buf<f32, read_write>, %x: buf<f32, read>, %z: buf<f32, read>, %n: u32) {
  %zero = const 0 : u32
  %one = const 1 : u32
  %start = load %dotp[%zero]
  %sum = for %j = %zero to %n step %one carry(%acc = %start) {
    %xv = load %x[%j]
    %zv = load %z[%j]
    %p = mul %xv, %zv
    %s = add %acc, %p
    yield %s
  }
  store %dotp[%zero], %sum
}
)";

// node_a: x = alpha * x + beta * y
static const char *node_a_wgsl = R"(
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
struct Params { alpha: f32, beta: f32 }
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  x[i] = params.alpha * x[i] + params.beta * y[i];
}
)";

// node_b: z = gamma * z + beta * y
static const char *node_b_glsl = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Z { float z[]; };
layout(set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(set = 0, binding = 2) uniform Params { float gamma; float beta; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  z[i] = gamma * z[i] + beta * y[i];
}
)";

static std::vector<float> read_floats(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: dotp DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<float> in = read_floats(dir + "/inputs.bin");
  if (in.size() != 3 + 3 * n) {
    std::cerr << "dotp: " << dir << "/inputs.bin holds " << in.size() << " floats, not " << 3 + 3 * n << "\n";
    return 2;
  }
  const float alpha = in[0], beta = in[1], gamma = in[2];
  const float *x_in = &in[3], *y_in = &in[3 + n], *z_in = &in[3 + 2 * n];

  try {
    sycl::queue q{sycl::gpu_selector_v};
    std::cout << "device: " << q.get_device().name() << "\n";

    sycl::kernel_bundle::from_text(q.get_context(), kernels);
    sycl::kernel init = sycl::kernel("init"), dot = sycl::kernel("dot");
    sycl::kernel axpby = sycl::kernel_bundle::from_wgsl(q.get_context(), node_a_wgsl, "main", "axpby");
    sycl::kernel gzpby = sycl::kernel_bundle::from_glsl(q.get_context(), node_b_glsl, "gzpby");

    sycl_ext::command_graph g{q.get_context(), q.get_device()};

    float *dotp = sycl::malloc_device<float>(1, q);
    float *x = sycl::malloc_device<float>(n, q);
    float *y = sycl::malloc_device<float>(n, q);
    float *z = sycl::malloc_device<float>(n, q);
    float *x0 = sycl::malloc_device<float>(n, q);
    float *y0 = sycl::malloc_device<float>(n, q);
    float *z0 = sycl::malloc_device<float>(n, q);
    q.memcpy(x0, x_in, n * sizeof(float));
    q.memcpy(y0, y_in, n * sizeof(float));
    q.memcpy(z0, z_in, n * sizeof(float));
    q.memset(dotp, 0, sizeof(float)).wait();

    auto n_i = g.add([&](sycl::handler &h) { h.parallel_for(n, init, x, y, z, x0, y0, z0); });

    auto node_a = g.add([&](sycl::handler &h) { h.parallel_for(sycl::range<1>{n}, axpby, x, y, alpha, beta); },
                        {sycl_ext::property::node::depends_on(n_i)});

    auto node_b = g.add([&](sycl::handler &h) { h.parallel_for(sycl::range<1>{n}, gzpby, z, y, gamma, beta); },
                        {sycl_ext::property::node::depends_on(n_i)});

    auto node_c = g.add([&](sycl::handler &h) { h.single_task(dot, dotp, x, z, static_cast<uint32_t>(n)); },
                        {sycl_ext::property::node::depends_on(node_a, node_b)});

    auto executable_graph = g.finalize();
    executable_graph.export_ir(dir + "/graph.cgir");
    executable_graph.compile_to_file(dir + "/graph.cgb");

    q.ext_oneapi_graph(executable_graph).wait();

    std::vector<float> dotp_host(1), x_host(n), z_host(n);
    q.copy(dotp, dotp_host.data(), 1).wait();
    q.copy(x, x_host.data(), n);
    q.copy(z, z_host.data(), n);

    std::ofstream out(dir + "/outputs.bin", std::ios::binary);
    out.write(reinterpret_cast<const char *>(dotp_host.data()), sizeof(float));
    out.write(reinterpret_cast<const char *>(x_host.data()), static_cast<std::streamsize>(n * sizeof(float)));
    out.write(reinterpret_cast<const char *>(z_host.data()), static_cast<std::streamsize>(n * sizeof(float)));
    out.close();

    // The host's result, the same operations in the same order.
    float gold = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      const float xi = alpha * x_in[i] + beta * y_in[i];
      const float zi = gamma * z_in[i] + beta * y_in[i];
      gold += xi * zi;
    }
    std::cout << "nodes: " << g.node_count() << ", node_c has " << node_c.predecessor_count() << " predecessors\n";
    std::printf("dotp: device %.9g, host %.9g\n", static_cast<double>(dotp_host[0]), static_cast<double>(gold));

    for (float *p : {dotp, x, y, z, x0, y0, z0}) sycl::free(p, q);
    if (std::memcmp(&dotp_host[0], &gold, sizeof(float)) != 0) {
      std::cerr << "dotp: the device's result differs from the host's\n";
      return 1;
    }
  } catch (const sycl::exception &e) {
    std::cerr << "dotp: sycl::exception (" << e.code().message() << "): " << e.what() << "\n";
    return 1;
  }
  std::cout << "done.\n";
  return 0;
}
