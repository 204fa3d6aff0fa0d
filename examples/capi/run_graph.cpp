// run_graph.cpp: run_graph.c's sequence through the C++ wrapper (cmdgraph.hpp); it writes the
// same output file, which capi/tests/c_example.rs compares with the C program's and the
// reference interpreter's.
//
//   c++ -std=c++17 -Wall -Wextra -Werror -I capi/include -I examples/capi
//       examples/capi/run_graph.cpp -L target/debug -lcmdgraph -Wl,-rpath,target/debug -o run_graph_cpp
//   ./run_graph_cpp demo.cgb out.txt [--validation]
#include "cmdgraph.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

namespace {

constexpr size_t N = 1024;

// Floats k / 2^23 - 1 in [-1, 1) from a 32-bit LCG (as run_graph.c).
std::vector<float> random_floats(uint32_t seed) {
    std::vector<float> out(N);
    uint32_t state = seed;
    for (float &f : out) {
        state = state * 1664525u + 1013904223u;
        f = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
    }
    return out;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

void dump(std::ofstream &out, int run, const cmdgraph::bundle &b, cmdgraph::executor &ex) {
    for (const auto &[name, size] : b.memories()) {
        std::vector<uint8_t> bytes = ex.read(name.c_str());
        if (bytes.size() != size) throw std::runtime_error("size of @" + name);
        out << "run" << run << ' ' << name << ' ';
        char hex[3];
        for (uint8_t byte : bytes) {
            std::snprintf(hex, sizeof hex, "%02x", byte);
            out << hex;
        }
        out << '\n';
    }
}

}  // namespace

int main(int argc, char **argv) try {
    if (argc < 3) {
        std::cerr << "usage: " << argv[0] << " BUNDLE.cgb OUTPUT [--validation]\n";
        return 2;
    }
    cmdgraph_executor_options options = cmdgraph_executor_options_default();
    const char *env = std::getenv("CMDGRAPH_VK_VALIDATION");
    options.validation = (argc > 3 && std::strcmp(argv[3], "--validation") == 0) || (env && std::strcmp(env, "1") == 0);
    cmdgraph::bundle bundle(argv[1]);
    cmdgraph::executor ex(bundle, options);
    std::cerr << "run_graph_cpp: on " << ex.device_name() << '\n';
    ex.bind("@in", random_floats(1));
    ex.bind("in_alt", random_floats(2));
    ex.bind("@y", random_floats(3));
    uint32_t tag = 1000, calls = 0;  // what run_graph.c keeps behind its user pointer
    ex.on_host_task("stats", [&](cmdgraph::host_memory &m) {
        std::vector<float> act = m.read<float>("@act");
        uint32_t positives = 0;
        float hi = act[0], lo = act[0];
        for (float v : act) {
            if (v > 0.0f) positives++;
            if (v > hi) hi = v;
            if (v < lo) lo = v;
        }
        calls++;
        m.write<uint32_t>("@stats", {positives, bits(hi), bits(lo), tag + calls});
    });
    std::ofstream out(argv[2]);
    {
        cmdgraph::exec exec = ex.finalize("@demo", true);
        exec.run();
        exec.wait();
        dump(out, 1, bundle, ex);
        exec.update("%alpha", -0.75f);
        exec.update("slope", 0.3f);
        exec.update_pointer("%src", "@in_alt");
        exec.set_active("%activation", 1);
        float gain = 0.5f;
        exec.update_bytes("%gain", &gain, sizeof gain);
        exec.run();
        exec.wait();
        dump(out, 2, bundle, ex);
        for (const auto &n : exec.profile()) std::cerr << "  %" << n.name << ' ' << n.end_ns - n.start_ns << " ns\n";
    }
    out.close();
    if (!out || calls != 2) throw std::runtime_error("the output was not written, or stats did not run twice");
    std::vector<std::string> messages = ex.take_messages();
    for (const auto &m : messages) std::cerr << "validation: " << m << '\n';
    return messages.empty() ? 0 : 1;
} catch (const std::exception &e) {
    std::cerr << "run_graph_cpp: " << e.what() << '\n';
    return 1;
}
