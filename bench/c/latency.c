/*
 * The C API's row of `cmdgraph-bench latency` (bench/src/runtime/api_latency.rs): loads a
 * bundle of a chain of N kernels each adding 1.0 to 64 floats, checks one run from zeros,
 * then times `cmdgraph_exec_run` + `cmdgraph_exec_wait` SAMPLES times and prints the median
 * in microseconds as `median_us <value>`.
 *
 *   latency BUNDLE.cgb GRAPH MEMORY N SAMPLES
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <cmdgraph.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ELEMS = 64 };

static void fail(const char *what, const char *message) {
    fprintf(stderr, "latency: %s: %s\n", what, message ? message : "(no message)");
    exit(1);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s BUNDLE.cgb GRAPH MEMORY N SAMPLES\n", argv[0]);
        return 2;
    }
    const char *graph = argv[2], *memory = argv[3];
    long n = strtol(argv[4], NULL, 10), samples = strtol(argv[5], NULL, 10);
    if (n < 1 || samples < 1) fail("arguments", "N and SAMPLES must be positive");

    cmdgraph_bundle *bundle = NULL;
    if (cmdgraph_bundle_open(argv[1], &bundle) != CMDGRAPH_OK) fail("open", cmdgraph_last_error());
    cmdgraph_executor_options options = cmdgraph_executor_options_default();
    cmdgraph_executor *ex = NULL;
    if (cmdgraph_executor_create(bundle, &options, &ex) != CMDGRAPH_OK) fail("executor", cmdgraph_bundle_last_error(bundle));
    cmdgraph_exec *exec = NULL;
    if (cmdgraph_executor_finalize(ex, graph, NULL, &exec) != CMDGRAPH_OK) fail("finalize", cmdgraph_executor_last_error(ex));

    static float x[ELEMS];
    memset(x, 0, sizeof x);
    if (cmdgraph_executor_bind(ex, memory, x, sizeof x) != CMDGRAPH_OK) fail("bind", cmdgraph_executor_last_error(ex));
    if (cmdgraph_exec_run(exec) != CMDGRAPH_OK || cmdgraph_exec_wait(exec) != CMDGRAPH_OK) {
        fail("run", cmdgraph_exec_last_error(exec));
    }
    size_t got = 0;
    if (cmdgraph_executor_read(ex, memory, x, sizeof x, &got) != CMDGRAPH_OK || got != sizeof x) {
        fail("read", cmdgraph_executor_last_error(ex));
    }
    for (int i = 0; i < ELEMS; i++) {
        if (x[i] != (float)n) fail("check", "the chain's output is not N at every element");
    }

    double *t = malloc((size_t)samples * sizeof *t);
    if (!t) fail("malloc", "out of memory");
    for (long s = 0; s < samples; s++) {
        double start = now_us();
        if (cmdgraph_exec_run(exec) != CMDGRAPH_OK || cmdgraph_exec_wait(exec) != CMDGRAPH_OK) {
            fail("run", cmdgraph_exec_last_error(exec));
        }
        t[s] = now_us() - start;
    }
    qsort(t, (size_t)samples, sizeof *t, by_value);
    double median = samples % 2 ? t[samples / 2] : 0.5 * (t[samples / 2 - 1] + t[samples / 2]);
    printf("device %s\nmedian_us %.3f\n", cmdgraph_executor_device_name(ex), median);
    free(t);
    cmdgraph_exec_destroy(exec);
    cmdgraph_executor_destroy(ex);
    cmdgraph_bundle_destroy(bundle);
    return 0;
}
