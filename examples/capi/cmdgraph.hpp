// cmdgraph.hpp: a small C++17 RAII wrapper over the C API (cmdgraph.h). Handles are unique
// (move-only) and freed by their destructors; every error throws cmdgraph::error carrying the
// status and the message. Host-task callbacks are std::functions; an exception thrown by
// one fails the run with its message (it never unwinds through the library).
#pragma once

#include <cmdgraph.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph {

// A failed call: the status and the library's message.
struct error : std::runtime_error {
    cmdgraph_status status;
    error(cmdgraph_status s, const std::string &message)
        : std::runtime_error(std::string(cmdgraph_status_name(s)) + ": " + message), status(s) {}
};

inline void check(cmdgraph_status s, const char *message) { if (s != CMDGRAPH_OK) throw error(s, message); }

template <typename T, void (*Destroy)(T *)> struct deleter {
    void operator()(T *p) const noexcept { Destroy(p); }
};
template <typename T, void (*Destroy)(T *)>
using handle = std::unique_ptr<T, deleter<T, Destroy>>;

// The memory a host-task callback may touch (valid during the callback only).
class host_memory {
  public:
    explicit host_memory(cmdgraph_host_memory *m) : m_(m) {}
    std::string node() const { return cmdgraph_host_memory_node(m_); }
    uint64_t size(const char *name) const {
        uint64_t s = 0;
        check(cmdgraph_host_memory_size(m_, name, &s), cmdgraph_host_memory_last_error(m_));
        return s;
    }
    template <typename T> std::vector<T> read(const char *name) const {
        std::vector<T> v(size(name) / sizeof(T));
        check(cmdgraph_host_memory_read(m_, name, 0, v.data(), v.size() * sizeof(T)),
              cmdgraph_host_memory_last_error(m_));
        return v;
    }
    template <typename T> void write(const char *name, const std::vector<T> &v, uint64_t offset = 0) {
        check(cmdgraph_host_memory_write(m_, name, offset, v.data(), v.size() * sizeof(T)),
              cmdgraph_host_memory_last_error(m_));
    }

  private:
    cmdgraph_host_memory *m_;
};

using host_fn = std::function<void(host_memory &)>;

// The callbacks of an executor, shared with its executables (which keep it alive).
using callbacks = std::shared_ptr<std::vector<std::unique_ptr<host_fn>>>;

class bundle {
  public:
    explicit bundle(const std::string &path) {
        cmdgraph_bundle *b = nullptr;
        check(cmdgraph_bundle_open(path.c_str(), &b), cmdgraph_last_error());
        h_.reset(b);
    }
    cmdgraph_bundle *get() const { return h_.get(); }
    // The user memory objects: name and byte size.
    std::vector<std::pair<std::string, uint64_t>> memories() const {
        size_t n = 0;
        check(cmdgraph_bundle_memory_count(get(), &n), cmdgraph_bundle_last_error(get()));
        std::vector<std::pair<std::string, uint64_t>> out;
        for (size_t i = 0; i < n; i++) {
            const char *name = nullptr;
            uint64_t size = 0;
            check(cmdgraph_bundle_memory(get(), i, &name, &size), cmdgraph_bundle_last_error(get()));
            out.emplace_back(name, size);
        }
        return out;
    }

  private:
    handle<cmdgraph_bundle, cmdgraph_bundle_destroy> h_;
};

class exec {
  public:
    exec(cmdgraph_exec *e, callbacks c) : callbacks_(std::move(c)), h_(e) {}
    void run() { check(cmdgraph_exec_run(get()), err()); }
    void wait() { check(cmdgraph_exec_wait(get()), err()); }
    // A run that waits for, and signals, the application's timeline semaphores.
    void run_with(const std::vector<cmdgraph_semaphore_value> &waits,
                  const std::vector<cmdgraph_semaphore_value> &signals) {
        check(cmdgraph_exec_run_with(get(), waits.data(), waits.size(), signals.data(), signals.size()), err());
    }
    void update(const char *param, float v) { check(cmdgraph_exec_update_f32(get(), param, v), err()); }
    void update(const char *param, int32_t v) { check(cmdgraph_exec_update_i32(get(), param, v), err()); }
    void update(const char *param, uint32_t v) { check(cmdgraph_exec_update_u32(get(), param, v), err()); }
    void update(const char *param, int64_t v) { check(cmdgraph_exec_update_i64(get(), param, v), err()); }
    void update(const char *param, uint64_t v) { check(cmdgraph_exec_update_u64(get(), param, v), err()); }
    void update(const char *param, double v) { check(cmdgraph_exec_update_f64(get(), param, v), err()); }
    void update(const char *param, int8_t v) { check(cmdgraph_exec_update_i8(get(), param, v), err()); }
    void update(const char *param, uint8_t v) { check(cmdgraph_exec_update_u8(get(), param, v), err()); }
    void update(const char *param, int16_t v) { check(cmdgraph_exec_update_i16(get(), param, v), err()); }
    void update(const char *param, uint16_t v) { check(cmdgraph_exec_update_u16(get(), param, v), err()); }
    void update(const char *param, bool v) { check(cmdgraph_exec_update_bool(get(), param, v), err()); }
    void update_pointer(const char *param, const char *memory, uint64_t offset = 0) {
        check(cmdgraph_exec_update_pointer(get(), param, memory, offset), err());
    }
    void update_bytes(const char *param, const void *data, size_t len) {
        check(cmdgraph_exec_update_bytes(get(), param, data, len), err());
    }
    void set_active(const char *dcg, uint32_t index) { check(cmdgraph_exec_set_active(get(), dcg, index), err()); }
    void update_graph(const bundle &source, const char *graph) {
        check(cmdgraph_exec_update_graph(get(), source.get(), graph), err());
    }
    void update_nodes(const bundle &source, const char *graph, const std::vector<const char *> &nodes) {
        check(cmdgraph_exec_update_nodes(get(), source.get(), graph, nodes.data(), nodes.size()), err());
    }
    void update_range(const char *node, const std::vector<uint64_t> &global) {
        check(cmdgraph_exec_update_range(get(), node, uint32_t(global.size()), global.data()), err());
    }
    void update_nd_range(const char *node, const std::vector<uint64_t> &global, const std::vector<uint64_t> &local) {
        if (global.size() != local.size()) throw error(CMDGRAPH_ERROR_INVALID_ARGUMENT, "global and local differ in dimensions");
        check(cmdgraph_exec_update_nd_range(get(), node, uint32_t(global.size()), global.data(), local.data()), err());
    }
    struct node_time { std::string name; uint64_t start_ns, end_ns; };
    // Per-node times of the last run (finalized with node profiling).
    std::vector<node_time> profile() {
        cmdgraph_profile p;
        check(cmdgraph_exec_profile(get(), &p), err());
        std::vector<node_time> out;
        for (size_t i = 0; i < p.node_count; i++) {
            cmdgraph_node_profile n;
            check(cmdgraph_exec_profile_node(get(), i, &n), err());
            out.push_back({n.name, n.start_ns, n.end_ns});
        }
        return out;
    }
    cmdgraph_exec *get() const { return h_.get(); }

  private:
    const char *err() const { return cmdgraph_exec_last_error(get()); }
    callbacks callbacks_;  // declared first: outlives the runs the handle's destruction waits for
    handle<cmdgraph_exec, cmdgraph_exec_destroy> h_;
};

class executor {
  public:
    explicit executor(bundle &b, const cmdgraph_executor_options &o = cmdgraph_executor_options_default())
        : callbacks_(std::make_shared<std::vector<std::unique_ptr<host_fn>>>()) {
        cmdgraph_executor *e = nullptr;
        check(cmdgraph_executor_create(b.get(), &o, &e), cmdgraph_bundle_last_error(b.get()));
        h_.reset(e);
    }
    // On the application's instance, device and queue (docs/capi.md).
    executor(bundle &b, const cmdgraph_vulkan_objects &vk,
             const cmdgraph_executor_options &o = cmdgraph_executor_options_default())
        : callbacks_(std::make_shared<std::vector<std::unique_ptr<host_fn>>>()) {
        cmdgraph_executor *e = nullptr;
        check(cmdgraph_executor_create_vulkan(b.get(), &vk, &o, &e), cmdgraph_bundle_last_error(b.get()));
        h_.reset(e);
    }
    // Memory `memory` becomes `size` bytes of the application's VkBuffer from `offset`.
    void import_buffer(const char *memory, uint64_t vk_buffer, uint64_t offset, uint64_t size) {
        check(cmdgraph_executor_import_buffer(get(), memory, vk_buffer, offset, size), err());
    }
    std::string device_name() const { return cmdgraph_executor_device_name(get()); }
    void bind(const char *memory, const void *data, size_t len) {
        check(cmdgraph_executor_bind(get(), memory, data, len), err());
    }
    template <typename T> void bind(const char *memory, const std::vector<T> &v) {
        bind(memory, v.data(), v.size() * sizeof(T));
    }
    std::vector<uint8_t> read(const char *memory) {
        uint64_t size = 0;
        check(cmdgraph_executor_memory_size(get(), memory, &size), err());
        std::vector<uint8_t> v(size);
        check(cmdgraph_executor_read(get(), memory, v.data(), v.size(), nullptr), err());
        return v;
    }
    // Registers `f` for host_task "name"; it runs on the executor's host-task thread.
    void on_host_task(const char *name, host_fn f) {
        callbacks_->push_back(std::make_unique<host_fn>(std::move(f)));
        check(cmdgraph_executor_register_callback(get(), name, trampoline, callbacks_->back().get()), err());
    }
    exec finalize(const char *graph, bool node_profiling = false) {
        cmdgraph_finalize_options o{node_profiling};
        cmdgraph_exec *e = nullptr;
        check(cmdgraph_executor_finalize(get(), graph, &o, &e), err());
        return exec(e, callbacks_);
    }
    // The validation layer's messages since the last call.
    std::vector<std::string> take_messages() {
        size_t n = 0;
        check(cmdgraph_executor_take_messages(get(), &n), err());
        std::vector<std::string> out;
        for (size_t i = 0; i < n; i++) out.emplace_back(cmdgraph_executor_message(get(), i));
        return out;
    }
    cmdgraph_executor *get() const { return h_.get(); }

  private:
    static cmdgraph_status trampoline(cmdgraph_host_memory *m, void *user) noexcept {
        try {
            host_memory mem(m);
            (*static_cast<host_fn *>(user))(mem);
            return CMDGRAPH_OK;
        } catch (const error &e) {
            cmdgraph_host_memory_set_error(m, e.what());
            return e.status;
        } catch (const std::exception &e) {
            cmdgraph_host_memory_set_error(m, e.what());
            return CMDGRAPH_ERROR_HOST_TASK_FAILED;
        } catch (...) {
            return CMDGRAPH_ERROR_HOST_TASK_FAILED;
        }
    }
    const char *err() const { return cmdgraph_executor_last_error(get()); }
    callbacks callbacks_;  // declared first: destroyed after the executor handle
    handle<cmdgraph_executor, cmdgraph_executor_destroy> h_;
};

}  // namespace cmdgraph
