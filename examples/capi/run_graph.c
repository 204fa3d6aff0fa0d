/*
 * run_graph.c: runs examples/capi/capi_demo.cgir's bundle through the C API.
 *
 *   cmdgraph compile examples/capi/capi_demo.cgir -o demo.cgb
 *   cc -std=c11 -Wall -Wextra -Werror -I capi/include examples/capi/run_graph.c \
 *      -L target/debug -lcmdgraph -Wl,-rpath,target/debug -o run_graph
 *   ./run_graph demo.cgb out.txt [--validation]
 *
 * Binds @in, @in_alt and @y with deterministic pseudo-random floats in [-1, 1) (full
 * precision, from a 32-bit LCG), registers the host task "stats" with a user pointer,
 * finalizes @demo with per-node profiling, runs it, then updates it (a scalar, a pointer, a
 * dynamic command group, raw bytes) and runs it again. After each run it writes every user
 * memory object as "run<N> <name> <hex bytes>" lines to the output file. Any error, and any
 * validation message (validation: --validation or CMDGRAPH_VK_VALIDATION=1), exits 1.
 * capi/tests/c_example.rs compares the file with the reference interpreter.
 */
#include <cmdgraph.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1024 };

/* The user pointer of the "stats" callback. */
typedef struct stats_user {
    uint32_t tag;
    uint32_t calls;
} stats_user;

static void fail(const char *what, cmdgraph_status st, const char *message) {
    fprintf(stderr, "run_graph: %s: %s: %s\n", what, cmdgraph_status_name(st), message);
    exit(1);
}

#define CHECK_EX(ex, call)                                                   \
    do {                                                                     \
        cmdgraph_status st_ = (call);                                        \
        if (st_ != CMDGRAPH_OK) fail(#call, st_, cmdgraph_executor_last_error(ex)); \
    } while (0)

#define CHECK_EXEC(exec, call)                                               \
    do {                                                                     \
        cmdgraph_status st_ = (call);                                        \
        if (st_ != CMDGRAPH_OK) fail(#call, st_, cmdgraph_exec_last_error(exec)); \
    } while (0)

/* Floats k / 2^23 - 1 in [-1, 1) from a 32-bit LCG (the test computes the same). */
static void random_floats(uint32_t seed, float *out, size_t n) {
    uint32_t state = seed;
    for (size_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        out[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
    }
}

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* host_task "stats" access(@act read, @stats write): positives, largest, smallest, tag. */
static cmdgraph_status stats(cmdgraph_host_memory *memory, void *user) {
    stats_user *u = (stats_user *)user;
    float act[N];
    uint64_t size = 0;
    cmdgraph_status st = cmdgraph_host_memory_size(memory, "@act", &size);
    if (st != CMDGRAPH_OK) return st;
    if (size != sizeof act) {
        cmdgraph_host_memory_set_error(memory, "@act has an unexpected size");
        return CMDGRAPH_ERROR_INVALID_ARGUMENT;
    }
    st = cmdgraph_host_memory_read(memory, "@act", 0, act, sizeof act);
    if (st != CMDGRAPH_OK) return st;
    uint32_t positives = 0;
    float hi = act[0], lo = act[0];
    for (size_t i = 0; i < N; i++) {
        if (act[i] > 0.0f) positives++;
        if (act[i] > hi) hi = act[i];
        if (act[i] < lo) lo = act[i];
    }
    u->calls++;
    uint32_t out[4] = {positives, float_bits(hi), float_bits(lo), u->tag + u->calls};
    return cmdgraph_host_memory_write(memory, "@stats", 0, out, sizeof out);
}

/* Writes every user memory object of the bundle as one "run<N> name hex" line. */
static void dump(FILE *f, int run, cmdgraph_bundle *bundle, cmdgraph_executor *ex) {
    size_t count = 0;
    if (cmdgraph_bundle_memory_count(bundle, &count) != CMDGRAPH_OK) {
        fail("memory count", CMDGRAPH_ERROR_INVALID_ARGUMENT, cmdgraph_bundle_last_error(bundle));
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = NULL;
        uint64_t size = 0;
        if (cmdgraph_bundle_memory(bundle, i, &name, &size) != CMDGRAPH_OK) {
            fail("memory", CMDGRAPH_ERROR_INVALID_ARGUMENT, cmdgraph_bundle_last_error(bundle));
        }
        /* Ask for the size first, as a caller without the bundle would. */
        size_t needed = 0;
        cmdgraph_status st = cmdgraph_executor_read(ex, name, NULL, 0, &needed);
        if (st != CMDGRAPH_ERROR_BUFFER_TOO_SMALL && !(st == CMDGRAPH_OK && needed == 0)) {
            fail("size query", st, cmdgraph_executor_last_error(ex));
        }
        if (needed != size) fail("size query", st, "the size differs from the bundle's");
        unsigned char *bytes = malloc(needed ? needed : 1);
        if (!bytes) fail("malloc", CMDGRAPH_ERROR_INVALID_ARGUMENT, "out of memory");
        CHECK_EX(ex, cmdgraph_executor_read(ex, name, bytes, needed, &needed));
        fprintf(f, "run%d %s ", run, name);
        for (size_t b = 0; b < needed; b++) fprintf(f, "%02x", bytes[b]);
        fprintf(f, "\n");
        free(bytes);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BUNDLE.cgb OUTPUT [--validation]\n", argv[0]);
        return 2;
    }
    cmdgraph_executor_options options = cmdgraph_executor_options_default();
    const char *env = getenv("CMDGRAPH_VK_VALIDATION");
    options.validation = (argc > 3 && strcmp(argv[3], "--validation") == 0) || (env && strcmp(env, "1") == 0);

    cmdgraph_bundle *bundle = NULL;
    cmdgraph_status st = cmdgraph_bundle_open(argv[1], &bundle);
    if (st != CMDGRAPH_OK) fail("open", st, cmdgraph_last_error());
    cmdgraph_executor *ex = NULL;
    st = cmdgraph_executor_create(bundle, &options, &ex);
    if (st != CMDGRAPH_OK) fail("executor", st, cmdgraph_bundle_last_error(bundle));
    fprintf(stderr, "run_graph: cmdgraph %s on %s (validation %s)\n", cmdgraph_version(),
            cmdgraph_executor_device_name(ex), options.validation ? "on" : "off");

    static float in[N], in_alt[N], y[N];
    random_floats(1, in, N);
    random_floats(2, in_alt, N);
    random_floats(3, y, N);
    CHECK_EX(ex, cmdgraph_executor_bind(ex, "@in", in, sizeof in));
    CHECK_EX(ex, cmdgraph_executor_bind(ex, "in_alt", in_alt, sizeof in_alt));
    CHECK_EX(ex, cmdgraph_executor_bind(ex, "@y", y, sizeof y));
    stats_user user = {.tag = 1000, .calls = 0};
    CHECK_EX(ex, cmdgraph_executor_register_callback(ex, "stats", stats, &user));

    cmdgraph_finalize_options fin = {.node_profiling = true};
    cmdgraph_exec *exec = NULL;
    CHECK_EX(ex, cmdgraph_executor_finalize(ex, "@demo", &fin, &exec));

    FILE *out = fopen(argv[2], "w");
    if (!out) fail("fopen", CMDGRAPH_ERROR_IO, argv[2]);

    CHECK_EXEC(exec, cmdgraph_exec_run(exec));
    CHECK_EXEC(exec, cmdgraph_exec_wait(exec));
    dump(out, 1, bundle, ex);

    /* Update every kind of dynamic argument, then run again. */
    CHECK_EXEC(exec, cmdgraph_exec_update_f32(exec, "%alpha", -0.75f));
    CHECK_EXEC(exec, cmdgraph_exec_update_f32(exec, "slope", 0.3f));
    CHECK_EXEC(exec, cmdgraph_exec_update_pointer(exec, "%src", "@in_alt", 0));
    CHECK_EXEC(exec, cmdgraph_exec_set_active(exec, "%activation", 1));
    float gain = 0.5f;
    CHECK_EXEC(exec, cmdgraph_exec_update_bytes(exec, "%gain", &gain, sizeof gain));
    CHECK_EXEC(exec, cmdgraph_exec_run(exec));
    CHECK_EXEC(exec, cmdgraph_exec_wait(exec));
    dump(out, 2, bundle, ex);
    if (fclose(out) != 0) fail("fclose", CMDGRAPH_ERROR_IO, argv[2]);

    cmdgraph_profile profile;
    CHECK_EXEC(exec, cmdgraph_exec_profile(exec, &profile));
    if (profile.node_count == 0) fail("profile", CMDGRAPH_ERROR_INVALID_ARGUMENT, "no node was profiled");
    for (size_t i = 0; i < profile.node_count; i++) {
        cmdgraph_node_profile node;
        CHECK_EXEC(exec, cmdgraph_exec_profile_node(exec, i, &node));
        fprintf(stderr, "run_graph: %%%s %llu ns\n", node.name,
                (unsigned long long)(node.end_ns - node.start_ns));
    }
    if (user.calls != 2) fail("stats", CMDGRAPH_ERROR_HOST_TASK_FAILED, "the callback did not run twice");

    cmdgraph_exec_destroy(exec);
    size_t messages = 0;
    CHECK_EX(ex, cmdgraph_executor_take_messages(ex, &messages));
    for (size_t i = 0; i < messages; i++) fprintf(stderr, "validation: %s\n", cmdgraph_executor_message(ex, i));
    cmdgraph_executor_destroy(ex);
    cmdgraph_bundle_destroy(bundle);
    if (messages > 0) {
        fprintf(stderr, "run_graph: %zu validation messages\n", messages);
        return 1;
    }
    return 0;
}
