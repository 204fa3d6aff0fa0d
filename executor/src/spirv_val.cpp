// A C++ frame around SPIRV-Tools' validator (src/spirv_val.rs): a C++ exception must not
// unwind into Rust ("Rust cannot catch foreign exceptions" aborts the process). The
// validator throws for instance std::bad_alloc or std::length_error when it preallocates
// for a huge module; here any exception becomes a result code and a message.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>

// The part of SPIRV-Tools' C API (include/spirv-tools/libspirv.h) the shim calls, declared
// here so that it needs no header: the library comes from the spirv-tools-sys crate, whose
// headers stay in its own source tree.
extern "C" {
typedef const struct spv_context_t* spv_const_context;
typedef struct spv_diagnostic_t* spv_diagnostic;
int spvValidateBinary(spv_const_context context, const uint32_t* words, const size_t num_words,
                      spv_diagnostic* diagnostic);
}

// spv_result_t values (libspirv.h).
constexpr int SPV_ERROR_INTERNAL = -1;
constexpr int SPV_ERROR_OUT_OF_MEMORY = -2;

namespace {
// Copies `what` into `out` (nul-terminated, truncated to `cap` bytes).
void copy_message(const char* what, char* out, size_t cap) {
  if (out == nullptr || cap == 0) return;
  size_t n = what == nullptr ? 0 : std::strlen(what);
  if (n >= cap) n = cap - 1;
  if (n > 0) std::memcpy(out, what, n);
  out[n] = '\0';
}
}  // namespace

// spvValidateBinary, with every exception caught: returns the validator's result, or
// SPV_ERROR_OUT_OF_MEMORY / SPV_ERROR_INTERNAL with `*threw` set to 1 and the exception's
// `what()` in `message` when it threw (`*threw` is 0 otherwise).
extern "C" int cmdgraph_spv_validate_binary(spv_const_context context, const uint32_t* words, size_t num_words,
                                            spv_diagnostic* diagnostic, int* threw, char* message,
                                            size_t message_cap) {
  *threw = 0;
  try {
    return spvValidateBinary(context, words, num_words, diagnostic);
  } catch (const std::bad_alloc& e) {
    *threw = 1;
    copy_message(e.what(), message, message_cap);
    return SPV_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    *threw = 1;
    copy_message(e.what(), message, message_cap);
    return SPV_ERROR_INTERNAL;
  } catch (...) {
    *threw = 1;
    copy_message("an exception of unknown type", message, message_cap);
    return SPV_ERROR_INTERNAL;
  }
}
