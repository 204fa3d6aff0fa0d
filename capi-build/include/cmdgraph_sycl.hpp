// cmdgraph_sycl.hpp: a C++17 API over cmdgraph_build.h that mirrors SYCL 2020 and
// sycl::ext::oneapi::experimental::command_graph (sycl_ext_oneapi_graph), so that a DPC++
// graph program ports by changing the namespace and writing its kernels as text
// (docs/capi.md, "Building graphs from C and C++"):
//
//   namespace sycl = cmdgraph::sycl;
//   namespace sycl_ext = cmdgraph::sycl::ext::oneapi::experimental;
//
// What differs from DPC++: kernels are registered from kernel-language text or WGSL/GLSL
// source (sycl::kernel_bundle) and launched by name with their arguments
// (h.parallel_for(range, kernel, args...)) instead of lambdas; USM addresses are not
// host-accessible (copy with queue::memcpy/copy); host tasks reach the USM they declare
// through a sycl::host_memory. Every object is a reference-counted handle, as in SYCL;
// errors are sycl::exception with code() (sycl::errc) and the library's message.
#ifndef CMDGRAPH_SYCL_HPP
#define CMDGRAPH_SYCL_HPP

#include <cmdgraph_build.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace cmdgraph {
namespace sycl {

/// SYCL 2020's error codes (the values of the SYCL specification).
enum class errc {
  success = 0, runtime = 1, kernel = 2, accessor = 3, nd_range = 4, event = 5,
  kernel_argument = 6, build = 7, invalid = 8, memory_allocation = 9, platform = 10,
  profiling = 11, feature_not_supported = 12, kernel_not_supported = 13, backend_mismatch = 14,
};

namespace detail {
class category : public std::error_category {
 public:
  const char *name() const noexcept override { return "sycl"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid: return "invalid";
      case errc::feature_not_supported: return "feature_not_supported";
      case errc::kernel_not_supported: return "kernel_not_supported";
      case errc::build: return "build";
      case errc::success: return "success";
      default: return "runtime";
    }
  }
};
}  // namespace detail

/// `sycl::sycl_category()`.
inline const std::error_category &sycl_category() noexcept {
  static const detail::category c;
  return c;
}

/// `sycl::make_error_code(errc)`.
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), sycl_category()}; }

}  // namespace sycl
}  // namespace cmdgraph

template <>
struct std::is_error_code_enum<cmdgraph::sycl::errc> : std::true_type {};

namespace cmdgraph {
namespace sycl {

/// `sycl::exception`: code() is the SYCL errc; status() the library's status.
class exception : public std::exception {
 public:
  exception(cmdgraph_sycl_status status, std::string message) : status_(status), message_(std::move(message)) {}
  const char *what() const noexcept override { return message_.c_str(); }
  std::error_code code() const noexcept { return make_error_code(errc_of(status_)); }
  cmdgraph_sycl_status status() const noexcept { return status_; }

  static errc errc_of(cmdgraph_sycl_status s) noexcept {
    switch (s) {
      case CMDGRAPH_SYCL_OK: return errc::success;
      case CMDGRAPH_SYCL_ERROR_INVALID: return errc::invalid;
      case CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED: return errc::feature_not_supported;
      case CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED: return errc::kernel_not_supported;
      case CMDGRAPH_SYCL_ERROR_COMPILE: return errc::build;
      default: return errc::runtime;
    }
  }

 private:
  cmdgraph_sycl_status status_;
  std::string message_;
};

namespace detail {
/// Throws the thread's last message when `s` is an error.
inline void check(cmdgraph_sycl_status s) {
  if (s != CMDGRAPH_SYCL_OK) throw exception(s, cmdgraph_sycl_last_error());
}

template <typename T, void (*Destroy)(T *)>
std::shared_ptr<T> own(T *p) {
  return std::shared_ptr<T>(p, [](T *h) { Destroy(h); });
}

template <typename T> struct type_of;
template <> struct type_of<bool> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_BOOL; };
template <> struct type_of<int8_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_I8; };
template <> struct type_of<uint8_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_U8; };
template <> struct type_of<int16_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_I16; };
template <> struct type_of<uint16_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_U16; };
template <> struct type_of<int32_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_I32; };
template <> struct type_of<uint32_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_U32; };
template <> struct type_of<int64_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_I64; };
template <> struct type_of<uint64_t> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_U64; };
template <> struct type_of<float> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_F32; };
template <> struct type_of<double> { static constexpr cmdgraph_sycl_type value = CMDGRAPH_SYCL_F64; };

/// A scalar kernel argument of C++ type T.
template <typename T>
cmdgraph_sycl_arg scalar_arg(T v) {
  static_assert(std::is_arithmetic<T>::value, "a kernel argument is a pointer, a scalar or a dynamic_parameter");
  using U = std::conditional_t<std::is_same<T, bool>::value, bool,
            std::conditional_t<std::is_floating_point<T>::value, T,
            std::conditional_t<std::is_signed<T>::value,
              std::conditional_t<sizeof(T) == 1, int8_t, std::conditional_t<sizeof(T) == 2, int16_t, std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>>,
              std::conditional_t<sizeof(T) == 1, uint8_t, std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>>>>;
  U u = static_cast<U>(v);
  uint64_t bits = 0;
  std::memcpy(&bits, &u, sizeof(U));
  return cmdgraph_sycl_arg_scalar(type_of<U>::value, bits);
}

class host_memory_ref;

/// What a context's handles share: the C context and the host-task callbacks it calls.
struct context_state {
  std::shared_ptr<cmdgraph_sycl_context> ctx;
  std::vector<std::unique_ptr<std::function<void(host_memory_ref &)>>> callbacks;
};
}  // namespace detail

/// `sycl::range<D>`.
template <int D = 1>
class range {
 public:
  template <typename... S, typename = std::enable_if_t<sizeof...(S) == D>>
  range(S... sizes) : v_{static_cast<uint64_t>(sizes)...} {}
  uint64_t operator[](int i) const { return v_[static_cast<size_t>(i)]; }
  const uint64_t *data() const { return v_.data(); }
  size_t size() const {
    size_t n = 1;
    for (auto x : v_) n *= static_cast<size_t>(x);
    return n;
  }

 private:
  std::array<uint64_t, D> v_;
};

/// `sycl::nd_range<D>`: global and work-group sizes.
template <int D = 1>
class nd_range {
 public:
  nd_range(range<D> global, range<D> local) : global_(global), local_(local) {}
  range<D> get_global_range() const { return global_; }
  range<D> get_local_range() const { return local_; }

 private:
  range<D> global_, local_;
};

/// Device selectors: the default Vulkan device, or the reference interpreter.
struct gpu_selector {};
struct default_selector {};
struct interpreter_selector {};
inline constexpr gpu_selector gpu_selector_v{};
inline constexpr default_selector default_selector_v{};
inline constexpr interpreter_selector interpreter_selector_v{};

/// `sycl::device`: the one device of a context.
class device {
 public:
  explicit device(std::string name) : name_(std::move(name)) {}
  std::string name() const { return name_; }

 private:
  std::string name_;
};

class queue;
class handler;
class kernel_bundle;

/// `sycl::context`: the device, and the registry of kernels, memory and host tasks.
class context {
 public:
  /// The default Vulkan device (validation as CMDGRAPH_VK_VALIDATION says).
  context() : context(gpu_selector_v) {}
  explicit context(gpu_selector) : context(CMDGRAPH_SYCL_BACKEND_VULKAN, false, nullptr) {}
  explicit context(default_selector) : context(CMDGRAPH_SYCL_BACKEND_VULKAN, false, nullptr) {}
  explicit context(interpreter_selector) : context(CMDGRAPH_SYCL_BACKEND_INTERPRETER, false, nullptr) {}
  /// A context on `backend` with the Vulkan validation layer on or off, bundles kept in
  /// `bundle_dir` (nullptr: a private directory).
  context(cmdgraph_sycl_backend backend, bool validation, const char *bundle_dir) {
    cmdgraph_sycl_context_options o = cmdgraph_sycl_context_options_default();
    o.backend = backend;
    o.validation = validation;
    o.bundle_dir = bundle_dir;
    cmdgraph_sycl_context *c = nullptr;
    detail::check(cmdgraph_sycl_context_create(&o, &c));
    state_ = std::make_shared<detail::context_state>();
    state_->ctx = detail::own<cmdgraph_sycl_context, cmdgraph_sycl_context_destroy>(c);
  }
  device get_device() const { return device(cmdgraph_sycl_context_device_name(raw())); }
  /// This process's rank for the context's communication nodes (docs/mpi.md): `comm`'s
  /// functions over the application's MPI, called on the runtime's host-task thread.
  void set_communicator(const cmdgraph_sycl_communicator &comm) {
    detail::check(cmdgraph_sycl_context_set_communicator(raw(), &comm));
  }
  cmdgraph_sycl_context *raw() const { return state_->ctx.get(); }
  const std::shared_ptr<detail::context_state> &state() const { return state_; }
  bool operator==(const context &o) const { return state_ == o.state_; }

 private:
  std::shared_ptr<detail::context_state> state_;
};

/// A registered kernel, launched by `handler::parallel_for`.
class kernel {
 public:
  explicit kernel(std::string name) : name_(std::move(name)) {}
  const std::string &get_name() const { return name_; }

 private:
  std::string name_;
};

/// Kernel registration (the part of `sycl::kernel_bundle` that applies): kernel-language
/// text (docs/ir.md) or a WGSL/GLSL compute shader.
class kernel_bundle {
 public:
  /// Registers every kernel of kernel-language text with `ctx`.
  static kernel_bundle from_text(const context &ctx, const std::string &text) {
    detail::check(cmdgraph_sycl_context_register_kernels(ctx.raw(), text.c_str()));
    return kernel_bundle();
  }
  /// Registers WGSL entry point `entry` as kernel `name`.
  static kernel from_wgsl(const context &ctx, const std::string &source, const std::string &entry, const std::string &name) {
    detail::check(cmdgraph_sycl_context_register_shader(ctx.raw(), CMDGRAPH_SYCL_WGSL, source.c_str(), entry.c_str(), name.c_str()));
    return kernel(name);
  }
  /// Registers a GLSL compute shader's `main` as kernel `name`.
  static kernel from_glsl(const context &ctx, const std::string &source, const std::string &name) {
    detail::check(cmdgraph_sycl_context_register_shader(ctx.raw(), CMDGRAPH_SYCL_GLSL, source.c_str(), "main", name.c_str()));
    return kernel(name);
  }
  /// `get_kernel(name)`: a kernel registered with the context.
  kernel get_kernel(const std::string &name) const { return kernel(name); }
};

/// `sycl::event`.
class event {
 public:
  event() = default;
  explicit event(cmdgraph_sycl_event *e) : e_(e ? detail::own<cmdgraph_sycl_event, cmdgraph_sycl_event_destroy>(e) : nullptr) {}
  void wait() {
    if (e_) detail::check(cmdgraph_sycl_event_wait(e_.get()));
  }
  bool is_complete() const {
    bool done = true;
    if (e_) detail::check(cmdgraph_sycl_event_is_complete(e_.get(), &done));
    return done;
  }
  cmdgraph_sycl_event *raw() const { return e_.get(); }

 private:
  std::shared_ptr<cmdgraph_sycl_event> e_;
};

/// Access modes of a host task's USM.
enum class access_mode { read = CMDGRAPH_SYCL_READ, write = CMDGRAPH_SYCL_WRITE, read_write = CMDGRAPH_SYCL_READ_WRITE };

/// One USM allocation a host task declares.
struct usm_access {
  const void *ptr;
  access_mode mode;
};

/// What a host task sees: the USM it declared, read and written by address.
class host_memory {
 public:
  explicit host_memory(cmdgraph_sycl_host_memory *m) : m_(m) {}
  template <typename T>
  void read(const T *src, T *dst, size_t count) {
    detail::check(cmdgraph_sycl_host_memory_read(m_, src, dst, count * sizeof(T)));
  }
  template <typename T>
  std::vector<T> read(const T *src, size_t count) {
    std::vector<T> v(count);
    read(src, v.data(), count);
    return v;
  }
  template <typename T>
  void write(T *dst, const T *src, size_t count) {
    detail::check(cmdgraph_sycl_host_memory_write(m_, dst, src, count * sizeof(T)));
  }

 private:
  cmdgraph_sycl_host_memory *m_;
};

namespace detail {
class host_memory_ref : public host_memory {
 public:
  using host_memory::host_memory;
};

/// The C callback of every C++ host task: exceptions become the run's error.
inline cmdgraph_sycl_status host_trampoline(cmdgraph_sycl_host_memory *m, void *user) {
  auto *f = static_cast<std::function<void(host_memory_ref &)> *>(user);
  try {
    host_memory_ref mem(m);
    (*f)(mem);
    return CMDGRAPH_SYCL_OK;
  } catch (const std::exception &e) {
    cmdgraph_sycl_host_memory_set_error(m, e.what());
  } catch (...) {
    cmdgraph_sycl_host_memory_set_error(m, "the host task threw a non-standard exception");
  }
  return CMDGRAPH_SYCL_ERROR_INVALID;
}
}  // namespace detail

namespace ext {
namespace oneapi {
namespace experimental {
enum class graph_state { modifiable, executable };
template <graph_state State = graph_state::modifiable> class command_graph;
template <typename T> class dynamic_parameter;
class dynamic_command_group;
class node;
}  // namespace experimental
}  // namespace oneapi
}  // namespace ext

namespace detail {
inline cmdgraph_sycl_arg to_arg(const void *p) { return cmdgraph_sycl_arg_pointer(p); }
template <typename T>
cmdgraph_sycl_arg to_arg(T *p) { return cmdgraph_sycl_arg_pointer(p); }
template <typename T, typename = std::enable_if_t<std::is_arithmetic<T>::value>>
cmdgraph_sycl_arg to_arg(T v) { return scalar_arg(v); }
template <typename T>
cmdgraph_sycl_arg to_arg(const ext::oneapi::experimental::dynamic_parameter<T> &p);
}  // namespace detail

/// `sycl::handler`: what a command-group function describes (one command).
class handler {
 public:
  explicit handler(std::shared_ptr<detail::context_state> ctx) : ctx_(std::move(ctx)) {
    cmdgraph_sycl_cg *cg = nullptr;
    detail::check(cmdgraph_sycl_cg_create(ctx_->ctx.get(), &cg));
    cg_ = detail::own<cmdgraph_sycl_cg, cmdgraph_sycl_cg_destroy>(cg);
  }

  /// `parallel_for(range, kernel)`: `kernel` with its arguments (USM pointers, scalars,
  /// dynamic parameters) in the kernel's parameter order.
  template <int D, typename... Args>
  void parallel_for(range<D> r, const kernel &k, const Args &...args) {
    std::vector<cmdgraph_sycl_arg> a{detail::to_arg(args)...};
    detail::check(cmdgraph_sycl_cg_parallel_for(cg_.get(), k.get_name().c_str(), D, r.data(), a.data(), a.size()));
  }
  template <typename... Args>
  void parallel_for(size_t n, const kernel &k, const Args &...args) {
    parallel_for(range<1>(n), k, args...);
  }
  template <int D, typename... Args>
  void parallel_for(nd_range<D> r, const kernel &k, const Args &...args) {
    std::vector<cmdgraph_sycl_arg> a{detail::to_arg(args)...};
    range<D> g = r.get_global_range(), l = r.get_local_range();
    detail::check(cmdgraph_sycl_cg_parallel_for_nd(cg_.get(), k.get_name().c_str(), D, g.data(), l.data(), a.data(), a.size()));
  }
  template <typename... Args>
  void single_task(const kernel &k, const Args &...args) {
    parallel_for(range<1>(1), k, args...);
  }
  void memcpy(void *dst, const void *src, size_t bytes) { detail::check(cmdgraph_sycl_cg_memcpy(cg_.get(), dst, src, bytes)); }
  template <typename T>
  void copy(const T *src, T *dst, size_t count) { memcpy(dst, src, count * sizeof(T)); }
  void memset(void *dst, int value, size_t bytes) {
    detail::check(cmdgraph_sycl_cg_memset(cg_.get(), dst, static_cast<uint8_t>(value), bytes));
  }
  template <typename T>
  void fill(T *dst, const T &pattern, size_t count) {
    cmdgraph_sycl_arg p = detail::scalar_arg(pattern);
    detail::check(cmdgraph_sycl_cg_fill(cg_.get(), dst, &p, count));
  }
  /// `host_task(f)`: `f(host_memory&)` runs on the runtime's host-task thread and reaches
  /// the USM listed in `access`.
  template <typename F>
  void host_task(F f, std::initializer_list<usm_access> access = {}) {
    auto fn = std::make_unique<std::function<void(detail::host_memory_ref &)>>([f](detail::host_memory_ref &m) mutable { f(static_cast<host_memory &>(m)); });
    std::vector<cmdgraph_sycl_access> acc;
    for (const auto &a : access) acc.push_back({a.ptr, static_cast<int32_t>(a.mode)});
    detail::check(cmdgraph_sycl_cg_host_task(cg_.get(), &detail::host_trampoline, fn.get(), acc.data(), acc.size()));
    ctx_->callbacks.push_back(std::move(fn));
  }
  /// cmdgraph's `ext_send`: `bytes` bytes of the USM at `ptr` to rank `to` with `tag`.
  void ext_send(void *ptr, size_t bytes, uint32_t to, uint32_t tag) {
    detail::check(cmdgraph_sycl_cg_send(cg_.get(), ptr, bytes, to, tag));
  }
  /// cmdgraph's `ext_recv`: `bytes` bytes into the USM at `ptr` from rank `from` with `tag`.
  void ext_recv(void *ptr, size_t bytes, uint32_t from, uint32_t tag) {
    detail::check(cmdgraph_sycl_cg_recv(cg_.get(), ptr, bytes, from, tag));
  }
  /// cmdgraph's `ext_allreduce`: `op` over every rank's bytes at `ptr`, in rank order.
  void ext_allreduce(cmdgraph_sycl_reduce_op op, void *ptr, size_t bytes) {
    detail::check(cmdgraph_sycl_cg_allreduce(cg_.get(), static_cast<int32_t>(op), ptr, bytes));
  }
  void depends_on(const event &e) { detail::check(cmdgraph_sycl_cg_depends_on(cg_.get(), e.raw())); }
  void depends_on(const std::vector<event> &es) {
    for (const auto &e : es) depends_on(e);
  }
  void ext_oneapi_barrier() { detail::check(cmdgraph_sycl_cg_barrier(cg_.get(), nullptr, 0)); }
  void ext_oneapi_barrier(const std::vector<event> &wait) {
    std::vector<const cmdgraph_sycl_event *> w;
    for (const auto &e : wait) w.push_back(e.raw());
    detail::check(cmdgraph_sycl_cg_barrier(cg_.get(), w.data(), w.size()));
  }
  inline void ext_oneapi_graph(const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &g);
  /// cmdgraph's conditional nodes (docs/conditional.md): the `uint32_t` at `cond` decides.
  /// `if`: `then` when it is non-zero, else `otherwise` (when given). The interpreter runs
  /// them; compiling for Vulkan refuses them for now.
  inline void ext_cmdgraph_if(uint32_t *cond, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &then);
  inline void ext_cmdgraph_if(uint32_t *cond, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &then, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &otherwise);
  /// `while`: `body` again and again while the word is non-zero, read before each round.
  inline void ext_cmdgraph_while(uint32_t *cond, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &body);
  /// `switch`: the case the word names, none past the last.
  inline void ext_cmdgraph_switch(uint32_t *cond, const std::vector<const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> *> &cases);
  /// `async_malloc(h, kind, bytes)` for `count` elements of T: a graph-owned allocation.
  template <typename T>
  T *async_malloc(size_t count, cmdgraph_sycl_usm_kind kind = CMDGRAPH_SYCL_USM_DEVICE) {
    void *p = nullptr;
    detail::check(cmdgraph_sycl_cg_async_malloc(cg_.get(), kind, detail::type_of<T>::value, count, &p));
    return static_cast<T *>(p);
  }
  void async_free(void *p) { detail::check(cmdgraph_sycl_cg_async_free(cg_.get(), p)); }
  cmdgraph_sycl_cg *raw() const { return cg_.get(); }

 private:
  std::shared_ptr<detail::context_state> ctx_;
  std::shared_ptr<cmdgraph_sycl_cg> cg_;
};

/// Properties (`sycl::property_list`): queue, graph, node and finalize properties in one
/// list; each call reads the ones it defines.
namespace property {
namespace queue {
struct in_order {};
struct enable_profiling {};
}  // namespace queue
}  // namespace property

class property_list {
 public:
  property_list() = default;
  template <typename... P, typename = std::enable_if_t<(!std::is_same<std::decay_t<P>, property_list>::value && ...)>>
  property_list(const P &...p) { (add(p), ...); }
  uint32_t queue_flags = 0, graph_flags = 0, node_flags = 0, finalize_flags = 0;
  std::vector<const cmdgraph_sycl_node *> deps;
  std::vector<std::shared_ptr<cmdgraph_sycl_node>> keep;

 private:
  void add(property::queue::in_order) { queue_flags |= CMDGRAPH_SYCL_QUEUE_IN_ORDER; }
  void add(property::queue::enable_profiling) { queue_flags |= CMDGRAPH_SYCL_QUEUE_ENABLE_PROFILING; }
  template <typename P>
  void add(const P &p) { p.apply(*this); }
};

/// `sycl::queue`.
class queue {
 public:
  queue() : queue(context()) {}
  explicit queue(gpu_selector s, const property_list &props = {}) : queue(context(s), props) {}
  explicit queue(interpreter_selector s, const property_list &props = {}) : queue(context(s), props) {}
  explicit queue(const context &ctx, const property_list &props = {}) : ctx_(ctx) {
    cmdgraph_sycl_queue *q = nullptr;
    detail::check(cmdgraph_sycl_queue_create(ctx.raw(), props.queue_flags, &q));
    q_ = detail::own<cmdgraph_sycl_queue, cmdgraph_sycl_queue_destroy>(q);
  }
  context get_context() const { return ctx_; }
  device get_device() const { return ctx_.get_device(); }

  /// `submit(cgf)`: runs (or records) the command group `cgf(handler&)` describes.
  template <typename F>
  event submit(F cgf) {
    handler h(ctx_.state());
    cgf(h);
    cmdgraph_sycl_event *e = nullptr;
    detail::check(cmdgraph_sycl_queue_submit(q_.get(), h.raw(), &e));
    return event(e);
  }
  inline event ext_oneapi_graph(const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &g);
  /// `memcpy(dst, src, bytes)`: either end may be host memory (then blocking).
  event memcpy(void *dst, const void *src, size_t bytes) {
    cmdgraph_sycl_event *e = nullptr;
    detail::check(cmdgraph_sycl_queue_memcpy(q_.get(), dst, src, bytes, &e));
    return event(e);
  }
  template <typename T>
  event copy(const T *src, T *dst, size_t count) { return memcpy(dst, src, count * sizeof(T)); }
  event memset(void *dst, int value, size_t bytes) {
    return submit([&](handler &h) { h.memset(dst, value, bytes); });
  }
  template <typename T>
  event fill(T *dst, const T &pattern, size_t count) {
    return submit([&](handler &h) { h.fill(dst, pattern, count); });
  }
  template <int D, typename... Args>
  event parallel_for(range<D> r, const kernel &k, const Args &...args) {
    return submit([&](handler &h) { h.parallel_for(r, k, args...); });
  }
  void wait() { detail::check(cmdgraph_sycl_queue_wait(q_.get())); }
  cmdgraph_sycl_queue *raw() const { return q_.get(); }

 private:
  context ctx_;
  std::shared_ptr<cmdgraph_sycl_queue> q_;
};

/// `sycl::malloc_device<T>(count, q)` and friends: a USM address of the queue's context.
template <typename T>
T *malloc(size_t count, const queue &q, cmdgraph_sycl_usm_kind kind) {
  void *p = nullptr;
  detail::check(cmdgraph_sycl_malloc(q.get_context().raw(), kind, detail::type_of<T>::value, count, &p));
  return static_cast<T *>(p);
}
template <typename T>
T *malloc_device(size_t count, const queue &q) { return malloc<T>(count, q, CMDGRAPH_SYCL_USM_DEVICE); }
template <typename T>
T *malloc_shared(size_t count, const queue &q) { return malloc<T>(count, q, CMDGRAPH_SYCL_USM_SHARED); }
template <typename T>
T *malloc_host(size_t count, const queue &q) { return malloc<T>(count, q, CMDGRAPH_SYCL_USM_HOST); }
/// `sycl::free(ptr, q)`.
inline void free(void *ptr, const queue &q) { detail::check(cmdgraph_sycl_free(q.get_context().raw(), ptr)); }

namespace ext {
namespace oneapi {
namespace experimental {

/// `node_type`.
enum class node_type {
  empty, subgraph, kernel, memcpy, memset, memfill, prefetch, memadvise, ext_oneapi_barrier, host_task,
  native_command, async_malloc, async_free,
};

/// `node`.
class node {
 public:
  explicit node(cmdgraph_sycl_node *n) : n_(detail::own<cmdgraph_sycl_node, cmdgraph_sycl_node_destroy>(n)) {}
  /// `get_type()`.
  node_type get_type() const {
    static const char *const names[] = {"empty", "subgraph", "kernel", "memcpy", "memset", "memfill", "prefetch",
                                        "memadvise", "ext_oneapi_barrier", "host_task", "native_command",
                                        "async_malloc", "async_free"};
    const std::string name = get_type_name();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
      if (name == names[i]) return static_cast<node_type>(i);
    throw exception(CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT, "unknown node type " + name);
  }
  /// `get_type()` as the spec spells it (`kernel`, `memcpy`, `host_task`, `subgraph`, ...).
  std::string get_type_name() const { return cmdgraph_sycl_node_type(n_.get()); }
  std::string name() const { return cmdgraph_sycl_node_name(n_.get()); }
  size_t predecessor_count() const {
    size_t p = 0;
    detail::check(cmdgraph_sycl_node_degree(n_.get(), &p, nullptr));
    return p;
  }
  size_t successor_count() const {
    size_t s = 0;
    detail::check(cmdgraph_sycl_node_degree(n_.get(), nullptr, &s));
    return s;
  }
  template <int D>
  void update_range(range<D> r) { detail::check(cmdgraph_sycl_node_update_range(n_.get(), D, r.data(), nullptr)); }
  template <int D>
  void update_nd_range(nd_range<D> r) {
    range<D> g = r.get_global_range(), l = r.get_local_range();
    detail::check(cmdgraph_sycl_node_update_range(n_.get(), D, g.data(), l.data()));
  }
  cmdgraph_sycl_node *raw() const { return n_.get(); }
  const std::shared_ptr<cmdgraph_sycl_node> &shared() const { return n_; }

 private:
  std::shared_ptr<cmdgraph_sycl_node> n_;
};

namespace property {
namespace graph {
struct no_cycle_check {
  void apply(property_list &l) const { l.graph_flags |= CMDGRAPH_SYCL_GRAPH_NO_CYCLE_CHECK; }
};
struct assume_buffer_outlives_graph {
  void apply(property_list &l) const { l.graph_flags |= CMDGRAPH_SYCL_GRAPH_ASSUME_BUFFER_OUTLIVES_GRAPH; }
};
struct updatable {
  void apply(property_list &l) const { l.finalize_flags |= CMDGRAPH_SYCL_FINALIZE_UPDATABLE; }
};
struct enable_profiling {
  void apply(property_list &l) const { l.finalize_flags |= CMDGRAPH_SYCL_FINALIZE_ENABLE_PROFILING; }
};
}  // namespace graph
namespace node {
/// `property::node::depends_on(nodes...)`.
class depends_on {
 public:
  template <typename... N>
  depends_on(const N &...nodes) : nodes_{nodes...} {}
  void apply(property_list &l) const {
    for (const auto &n : nodes_) {
      l.deps.push_back(n.raw());
      l.keep.push_back(n.shared());
    }
  }

 private:
  std::vector<experimental::node> nodes_;
};
struct depends_on_all_leaves {
  void apply(property_list &l) const { l.node_flags |= CMDGRAPH_SYCL_NODE_DEPENDS_ON_ALL_LEAVES; }
};
}  // namespace node
}  // namespace property

/// `command_graph<graph_state::executable>`: submitted with `queue::ext_oneapi_graph`.
template <>
class command_graph<graph_state::executable> {
 public:
  command_graph(std::shared_ptr<detail::context_state> ctx, cmdgraph_sycl_exec *e)
      : ctx_(std::move(ctx)), e_(detail::own<cmdgraph_sycl_exec, cmdgraph_sycl_exec_destroy>(e)) {}
  /// `update(node)`, `update(nodes)`: those nodes take the modifiable graph's values now.
  void update(const node &n) { update(std::vector<node>{n}); }
  void update(const std::vector<node> &nodes) {
    std::vector<const cmdgraph_sycl_node *> raw;
    for (const auto &n : nodes) raw.push_back(n.raw());
    detail::check(cmdgraph_sycl_exec_update_nodes(e_.get(), raw.data(), raw.size()));
  }
  inline void update(const command_graph<graph_state::modifiable> &g);
  /// The module's IR text, the input of `cmdgraph compile`.
  std::string ir() const {
    size_t size = 0;
    detail::check(cmdgraph_sycl_exec_ir(e_.get(), nullptr, 0, &size));
    std::string s(size, '\0');
    detail::check(cmdgraph_sycl_exec_ir(e_.get(), s.data(), s.size(), &size));
    return s;
  }
  void export_ir(const std::string &path) const { detail::check(cmdgraph_sycl_exec_export_ir(e_.get(), path.c_str())); }
  /// The bundle compiled in process: the bytes `cmdgraph compile` writes for `ir()`.
  void compile_to_file(const std::string &path) const {
    detail::check(cmdgraph_sycl_exec_compile_to_file(e_.get(), path.c_str()));
  }
  cmdgraph_sycl_exec *raw() const { return e_.get(); }

 private:
  std::shared_ptr<detail::context_state> ctx_;
  std::shared_ptr<cmdgraph_sycl_exec> e_;
};

/// `command_graph<graph_state::modifiable>`.
template <>
class command_graph<graph_state::modifiable> {
 public:
  command_graph(const context &ctx, const device &, const property_list &props = {}) : ctx_(ctx.state()) {
    cmdgraph_sycl_graph *g = nullptr;
    detail::check(cmdgraph_sycl_graph_create(ctx.raw(), props.graph_flags, &g));
    g_ = detail::own<cmdgraph_sycl_graph, cmdgraph_sycl_graph_destroy>(g);
  }
  explicit command_graph(const queue &q, const property_list &props = {}) : command_graph(q.get_context(), q.get_device(), props) {}

  /// `add(cgf, {depends_on(...)})`.
  template <typename F, typename = std::enable_if_t<std::is_invocable<F, handler &>::value>>
  node add(F cgf, const property_list &props = {}) {
    handler h(ctx_);
    cgf(h);
    return add_raw(h.raw(), props);
  }
  /// `add({depends_on(...)})`: an empty node.
  node add(const property_list &props = {}) { return add_raw(nullptr, props); }
  inline node add(dynamic_command_group &dcg, const property_list &props = {});
  void make_edge(const node &src, const node &dest) { detail::check(cmdgraph_sycl_graph_make_edge(g_.get(), src.raw(), dest.raw())); }
  void begin_recording(const queue &q) { detail::check(cmdgraph_sycl_graph_begin_recording(g_.get(), q.raw())); }
  void end_recording() { detail::check(cmdgraph_sycl_graph_end_recording(g_.get(), nullptr)); }
  void end_recording(const queue &q) { detail::check(cmdgraph_sycl_graph_end_recording(g_.get(), q.raw())); }
  size_t node_count() const {
    size_t n = 0;
    detail::check(cmdgraph_sycl_graph_node_count(g_.get(), &n));
    return n;
  }
  command_graph<graph_state::executable> finalize(const property_list &props = {}) const {
    cmdgraph_sycl_exec *e = nullptr;
    detail::check(cmdgraph_sycl_graph_finalize(g_.get(), props.finalize_flags, &e));
    return command_graph<graph_state::executable>(ctx_, e);
  }
  cmdgraph_sycl_graph *raw() const { return g_.get(); }
  const std::shared_ptr<detail::context_state> &state() const { return ctx_; }

 private:
  node add_raw(const cmdgraph_sycl_cg *cg, const property_list &props) {
    cmdgraph_sycl_node *n = nullptr;
    detail::check(cmdgraph_sycl_graph_add(g_.get(), cg, props.deps.data(), props.deps.size(), props.node_flags, &n));
    return node(n);
  }
  std::shared_ptr<detail::context_state> ctx_;
  std::shared_ptr<cmdgraph_sycl_graph> g_;
};

command_graph(const context &, const device &)->command_graph<graph_state::modifiable>;
command_graph(const context &, const device &, const property_list &)->command_graph<graph_state::modifiable>;
command_graph(const queue &)->command_graph<graph_state::modifiable>;

inline void command_graph<graph_state::executable>::update(const command_graph<graph_state::modifiable> &g) {
  detail::check(cmdgraph_sycl_exec_update_graph(e_.get(), g.raw()));
}

/// `dynamic_parameter<T>`: a kernel argument (a scalar T, or a USM pointer T) updated later.
template <typename T>
class dynamic_parameter {
 public:
  dynamic_parameter(const command_graph<graph_state::modifiable> &g, const T &initial) {
    cmdgraph_sycl_arg a = detail::to_arg(initial);
    cmdgraph_sycl_dynparam *p = nullptr;
    detail::check(cmdgraph_sycl_dynparam_create(g.raw(), &a, &p));
    p_ = detail::own<cmdgraph_sycl_dynparam, cmdgraph_sycl_dynparam_destroy>(p);
  }
  void update(const T &value) {
    cmdgraph_sycl_arg a = detail::to_arg(value);
    detail::check(cmdgraph_sycl_dynparam_update(p_.get(), &a));
  }
  cmdgraph_sycl_dynparam *raw() const { return p_.get(); }

 private:
  std::shared_ptr<cmdgraph_sycl_dynparam> p_;
};

/// `dynamic_command_group(graph, {cgf...})`.
class dynamic_command_group {
 public:
  dynamic_command_group(const command_graph<graph_state::modifiable> &g, const std::vector<std::function<void(handler &)>> &cgfs) {
    std::vector<handler> hs;
    std::vector<const cmdgraph_sycl_cg *> raw;
    for (const auto &f : cgfs) {
      hs.emplace_back(g.state());
      f(hs.back());
    }
    for (const auto &h : hs) raw.push_back(h.raw());
    cmdgraph_sycl_dcg *d = nullptr;
    detail::check(cmdgraph_sycl_dcg_create(g.raw(), raw.data(), raw.size(), &d));
    d_ = detail::own<cmdgraph_sycl_dcg, cmdgraph_sycl_dcg_destroy>(d);
  }
  void set_active_index(size_t i) { detail::check(cmdgraph_sycl_dcg_set_active(d_.get(), i)); }
  size_t get_active_index() const {
    size_t i = 0;
    detail::check(cmdgraph_sycl_dcg_get_active(d_.get(), &i));
    return i;
  }
  cmdgraph_sycl_dcg *raw() const { return d_.get(); }

 private:
  std::shared_ptr<cmdgraph_sycl_dcg> d_;
};

inline node command_graph<graph_state::modifiable>::add(dynamic_command_group &dcg, const property_list &props) {
  cmdgraph_sycl_node *n = nullptr;
  detail::check(cmdgraph_sycl_graph_add_dynamic(g_.get(), dcg.raw(), props.deps.data(), props.deps.size(), props.node_flags, &n));
  return node(n);
}

}  // namespace experimental
}  // namespace oneapi
}  // namespace ext

template <typename T>
cmdgraph_sycl_arg detail::to_arg(const ext::oneapi::experimental::dynamic_parameter<T> &p) {
  return cmdgraph_sycl_arg_dynamic(p.raw());
}

inline void handler::ext_oneapi_graph(const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &g) {
  detail::check(cmdgraph_sycl_cg_graph(cg_.get(), g.raw()));
}

inline void handler::ext_cmdgraph_if(uint32_t *cond, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &then) {
  const cmdgraph_sycl_exec *b[] = {then.raw()};
  detail::check(cmdgraph_sycl_cg_conditional(cg_.get(), 0, cond, b, 1));
}

inline void handler::ext_cmdgraph_if(uint32_t *cond, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &then, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &otherwise) {
  const cmdgraph_sycl_exec *b[] = {then.raw(), otherwise.raw()};
  detail::check(cmdgraph_sycl_cg_conditional(cg_.get(), 0, cond, b, 2));
}

inline void handler::ext_cmdgraph_while(uint32_t *cond, const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &body) {
  const cmdgraph_sycl_exec *b[] = {body.raw()};
  detail::check(cmdgraph_sycl_cg_conditional(cg_.get(), 1, cond, b, 1));
}

inline void handler::ext_cmdgraph_switch(uint32_t *cond, const std::vector<const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> *> &cases) {
  std::vector<const cmdgraph_sycl_exec *> b;
  for (const auto *c : cases) b.push_back(c->raw());
  detail::check(cmdgraph_sycl_cg_conditional(cg_.get(), 2, cond, b.data(), b.size()));
}

inline event queue::ext_oneapi_graph(const ext::oneapi::experimental::command_graph<ext::oneapi::experimental::graph_state::executable> &g) {
  cmdgraph_sycl_event *e = nullptr;
  detail::check(cmdgraph_sycl_queue_graph(q_.get(), g.raw(), nullptr, 0, &e));
  return event(e);
}

}  // namespace sycl
}  // namespace cmdgraph

#endif  // CMDGRAPH_SYCL_HPP
