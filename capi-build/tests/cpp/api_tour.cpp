// api_tour.cpp: the parts of cmdgraph_sycl.hpp that dotp.cpp does not use, run by
// capi-build/tests/programs/cpp_api.rs on the default Vulkan device with validation on. It prints one
// line per check, `name value...`, which the test compares with values it computes; any
// sycl::exception not expected ends the program with status 1.
#include <cmdgraph_sycl.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace sycl = cmdgraph::sycl;
namespace exp_ = cmdgraph::sycl::ext::oneapi::experimental;

static const char *kernels = R"(
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %s, %v
  store %y[%i], %r
}
kernel @offset(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = add %s, %v
  store %y[%i], %r
}
)";

static void print(const char *name, const std::vector<float> &v) {
  std::printf("%s", name);
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    std::printf(" %08x", bits);
  }
  std::printf("\n");
}

int main() {
  const size_t n = 8;
  // Inputs: x[i] = 1.1^i (not exactly representable), and a scale of 0.3.
  std::vector<float> x_host(n);
  float v = 1.0f;
  for (auto &e : x_host) e = (v *= 1.1f);
  try {
    sycl::queue q{sycl::gpu_selector_v, {sycl::property::queue::in_order{}}};
    sycl::context ctx = q.get_context();
    sycl::kernel_bundle::from_text(ctx, kernels);
    sycl::kernel scale("scale"), offset("offset");
    float *x = sycl::malloc_device<float>(n, q);
    float *y = sycl::malloc_device<float>(n, q);
    float *z = sycl::malloc_shared<float>(n, q);
    float *w = sycl::malloc_host<float>(n, q);
    q.copy(x_host.data(), x, n);

    // Recording an in-order queue: scale, then a host task, then offset.
    exp_::command_graph rec{ctx, q.get_device()};
    rec.begin_recording(q);
    q.submit([&](sycl::handler &h) { h.parallel_for(sycl::range<1>{n}, scale, x, y, 0.3f); });
    q.submit([&](sycl::handler &h) {
      h.host_task(
          [=](sycl::host_memory &m) {
            std::vector<float> t = m.read(y, n);
            for (auto &e : t) e = e * 2.0f;
            m.write(w, t.data(), n);
          },
          {{y, sycl::access_mode::read}, {w, sycl::access_mode::write}});
    });
    q.parallel_for(sycl::range<1>{n}, offset, w, z, 1.0f);
    rec.end_recording();
    std::printf("recorded %zu\n", rec.node_count());
    auto rec_exec = rec.finalize();
    q.ext_oneapi_graph(rec_exec).wait();
    std::vector<float> out(n);
    q.copy(z, out.data(), n).wait();
    print("recorded_z", out);

    // The explicit API: a dynamic parameter, a dynamic command group, an empty node, a
    // sub-graph, a graph allocation, make_edge; then updates.
    exp_::command_graph g{q};
    exp_::dynamic_parameter<float> s(g, 0.5f);
    auto a = g.add([&](sycl::handler &h) { h.parallel_for(n, scale, x, y, s); });
    exp_::dynamic_command_group dcg(g, {[&](sycl::handler &h) { h.parallel_for(n, scale, y, z, 3.0f); },
                                        [&](sycl::handler &h) { h.parallel_for(n, offset, y, z, 3.0f); }});
    auto b = g.add(dcg, {exp_::property::node::depends_on(a)});
    auto e = g.add({exp_::property::node::depends_on(b)});
    float *t = nullptr;
    auto alloc = g.add([&](sycl::handler &h) { t = h.async_malloc<float>(n); }, {exp_::property::node::depends_on(e)});
    auto use = g.add([&](sycl::handler &h) { h.parallel_for(n, scale, z, t, -1.0f); }, {exp_::property::node::depends_on(alloc)});
    auto copy = g.add([&](sycl::handler &h) { h.memcpy(w, t, n * sizeof(float)); });
    g.make_edge(use, copy);
    g.add([&](sycl::handler &h) { h.async_free(t); }, {exp_::property::node::depends_on(copy)});
    exp_::command_graph sub{ctx, q.get_device()};
    sub.add([&](sycl::handler &h) { h.fill(x, 2.5f, 2); });
    auto sub_exec = sub.finalize();
    auto subnode = g.add([&](sycl::handler &h) { h.ext_oneapi_graph(sub_exec); }, {exp_::property::node::depends_on_all_leaves{}});
    std::printf("types %s %s %s %s %s %s\n", a.get_type_name().c_str(), b.get_type_name().c_str(), e.get_type_name().c_str(),
                alloc.get_type_name().c_str(), copy.get_type_name().c_str(), subnode.get_type_name().c_str());
    std::printf("enum %d %d %d\n", a.get_type() == exp_::node_type::kernel, e.get_type() == exp_::node_type::empty,
                subnode.get_type() == exp_::node_type::subgraph);
    auto exec = g.finalize({exp_::property::graph::updatable{}});
    q.ext_oneapi_graph(exec).wait();
    q.copy(w, out.data(), n).wait();
    print("run1_w", out);
    q.copy(x, out.data(), n).wait();
    print("run1_x", out);

    q.copy(x_host.data(), x, n).wait();
    s.update(0.25f);
    dcg.set_active_index(1);
    exec.update({a, b});
    q.submit([&](sycl::handler &h) { h.ext_oneapi_graph(exec); }).wait();
    q.copy(w, out.data(), n).wait();
    print("run2_w", out);

    // Errors are sycl::exception with the errc.
    try {
      g.make_edge(copy, a);
      std::printf("cycle accepted\n");
    } catch (const sycl::exception &ex) {
      std::printf("cycle %s %d\n", ex.code() == sycl::errc::invalid ? "invalid" : "other", ex.code().value());
    }
    try {
      sycl::kernel_bundle::from_text(ctx, "kernel @broken(");
    } catch (const sycl::exception &ex) {
      std::printf("build %s\n", ex.code() == sycl::errc::build ? "build" : "other");
    }
    try {
      rec_exec.update(a);
    } catch (const sycl::exception &ex) {
      std::printf("update %s %s\n", ex.code().category().name(), ex.code().message().c_str());
    }
    for (float *p : {x, y, z, w}) sycl::free(p, q);

    // cmdgraph's conditional nodes, on the interpreter (not on Vulkan yet): a `while` whose
    // body scales by 0.3 and counts its word down, run for 3 rounds.
    sycl::queue iq{sycl::interpreter_selector_v};
    sycl::context ictx = iq.get_context();
    sycl::kernel_bundle::from_text(ictx, kernels);
    sycl::kernel_bundle::from_text(ictx, R"(
kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}
)");
    sycl::kernel countdown("countdown");
    float *ix = sycl::malloc_device<float>(n, iq);
    uint32_t *word = sycl::malloc_device<uint32_t>(1, iq);
    iq.copy(x_host.data(), ix, n).wait();
    exp_::command_graph body{ictx, iq.get_device()};
    auto sc = body.add([&](sycl::handler &h) { h.parallel_for(n, scale, ix, ix, 0.3f); });
    body.add([&](sycl::handler &h) { h.single_task(countdown, word); }, {exp_::property::node::depends_on(sc)});
    auto body_exec = body.finalize();
    exp_::command_graph loop{ictx, iq.get_device()};
    auto wn = loop.add([&](sycl::handler &h) { h.ext_cmdgraph_while(word, body_exec); });
    auto loop_exec = loop.finalize();
    const uint32_t rounds = 3;
    iq.copy(&rounds, word, 1).wait();
    iq.ext_oneapi_graph(loop_exec).wait();
    iq.copy(ix, out.data(), n).wait();
    std::printf("while %s\n", wn.get_type_name().c_str());
    print("while_x", out);
  } catch (const sycl::exception &ex) {
    std::cerr << "api_tour: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
