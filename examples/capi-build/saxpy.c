/*
 * saxpy.c: a graph built, compiled and run from C through cmdgraph_build.h (docs/capi.md,
 * "Building graphs from C and C++").
 *
 *   fill   y = 1.5 (n elements)
 *   axpy   y = a * x + y      (a is a dynamic parameter), after fill
 *   copy   out = y            (memcpy), after axpy
 *   check  a host task reading out and writing its first element + 1 to flag, after copy
 *
 * The graph is finalized updatable and run; then a is updated to a2, the executable graph
 * updated and run again. Usage: saxpy DIR reads DIR/inputs.bin (a, a2, then n = 4096 values
 * of x, little-endian f32) and writes DIR/outputs.bin (out after run 1, out after run 2, flag
 * after run 2).
 */
#include <cmdgraph_build.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static const char *kernels =
    "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {\n"
    "  %i = global_id 0\n"
    "  %xv = load %x[%i]\n"
    "  %yv = load %y[%i]\n"
    "  %ax = mul %a, %xv\n"
    "  %r = add %ax, %yv\n"
    "  store %y[%i], %r\n"
    "}\n";

static void check(cmdgraph_sycl_status s, const char *what) {
    if (s != CMDGRAPH_SYCL_OK) {
        fprintf(stderr, "saxpy: %s: %s: %s\n", what, cmdgraph_sycl_status_name(s), cmdgraph_sycl_last_error());
        exit(1);
    }
}

struct check_data {
    float *out;
    float *flag;
};

/* The host task: flag[0] = out[0] + 1. */
static cmdgraph_sycl_status check_task(cmdgraph_sycl_host_memory *mem, void *user) {
    const struct check_data *d = (const struct check_data *)user;
    float first = 0.0f;
    cmdgraph_sycl_status s = cmdgraph_sycl_host_memory_read(mem, d->out, &first, sizeof first);
    if (s != CMDGRAPH_SYCL_OK) return s;
    first += 1.0f;
    return cmdgraph_sycl_host_memory_write(mem, d->flag, &first, sizeof first);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: saxpy DIR\n");
        return 2;
    }
    char path[4096];
    static float in[2 + N];
    snprintf(path, sizeof path, "%s/inputs.bin", argv[1]);
    FILE *f = fopen(path, "rb");
    if (!f || fread(in, sizeof(float), 2 + N, f) != 2 + N) {
        fprintf(stderr, "saxpy: cannot read %s\n", path);
        return 2;
    }
    fclose(f);

    cmdgraph_sycl_context *ctx = NULL;
    check(cmdgraph_sycl_context_create(NULL, &ctx), "context");
    printf("device: %s\n", cmdgraph_sycl_context_device_name(ctx));
    check(cmdgraph_sycl_context_register_kernels(ctx, kernels), "kernels");
    cmdgraph_sycl_queue *q = NULL;
    check(cmdgraph_sycl_queue_create(ctx, CMDGRAPH_SYCL_QUEUE_IN_ORDER, &q), "queue");

    void *x = NULL, *y = NULL, *out = NULL, *flag = NULL;
    check(cmdgraph_sycl_malloc(ctx, CMDGRAPH_SYCL_USM_DEVICE, CMDGRAPH_SYCL_F32, N, &x), "malloc x");
    check(cmdgraph_sycl_malloc(ctx, CMDGRAPH_SYCL_USM_DEVICE, CMDGRAPH_SYCL_F32, N, &y), "malloc y");
    check(cmdgraph_sycl_malloc(ctx, CMDGRAPH_SYCL_USM_SHARED, CMDGRAPH_SYCL_F32, N, &out), "malloc out");
    check(cmdgraph_sycl_malloc(ctx, CMDGRAPH_SYCL_USM_HOST, CMDGRAPH_SYCL_F32, 1, &flag), "malloc flag");
    check(cmdgraph_sycl_memcpy(ctx, x, &in[2], sizeof(float) * N), "memcpy x");

    cmdgraph_sycl_graph *g = NULL;
    check(cmdgraph_sycl_graph_create(ctx, 0, &g), "graph");
    cmdgraph_sycl_arg a0 = cmdgraph_sycl_arg_f32(in[0]);
    cmdgraph_sycl_dynparam *a = NULL;
    check(cmdgraph_sycl_dynparam_create(g, &a0, &a), "dynamic parameter");

    cmdgraph_sycl_cg *cg = NULL;
    cmdgraph_sycl_node *fill = NULL, *axpy = NULL, *copy = NULL;
    cmdgraph_sycl_arg pattern = cmdgraph_sycl_arg_f32(1.5f);
    check(cmdgraph_sycl_cg_create(ctx, &cg), "cg");
    check(cmdgraph_sycl_cg_fill(cg, y, &pattern, N), "fill");
    check(cmdgraph_sycl_graph_add(g, cg, NULL, 0, 0, &fill), "add fill");
    cmdgraph_sycl_cg_destroy(cg);

    uint64_t global[1] = {N};
    cmdgraph_sycl_arg args[3];
    args[0] = cmdgraph_sycl_arg_pointer(x);
    args[1] = cmdgraph_sycl_arg_pointer(y);
    args[2] = cmdgraph_sycl_arg_dynamic(a);
    check(cmdgraph_sycl_cg_create(ctx, &cg), "cg");
    check(cmdgraph_sycl_cg_parallel_for(cg, "axpy", 1, global, args, 3), "parallel_for");
    const cmdgraph_sycl_node *after_fill[1] = {fill};
    check(cmdgraph_sycl_graph_add(g, cg, after_fill, 1, 0, &axpy), "add axpy");
    cmdgraph_sycl_cg_destroy(cg);

    check(cmdgraph_sycl_cg_create(ctx, &cg), "cg");
    check(cmdgraph_sycl_cg_memcpy(cg, out, y, sizeof(float) * N), "memcpy");
    check(cmdgraph_sycl_graph_add(g, cg, NULL, 0, 0, &copy), "add copy");
    check(cmdgraph_sycl_graph_make_edge(g, axpy, copy), "make_edge");
    cmdgraph_sycl_cg_destroy(cg);

    struct check_data data = {(float *)out, (float *)flag};
    cmdgraph_sycl_access access[2] = {{out, CMDGRAPH_SYCL_READ}, {flag, CMDGRAPH_SYCL_WRITE}};
    check(cmdgraph_sycl_cg_create(ctx, &cg), "cg");
    check(cmdgraph_sycl_cg_host_task(cg, check_task, &data, access, 2), "host_task");
    check(cmdgraph_sycl_graph_add(g, cg, NULL, 0, CMDGRAPH_SYCL_NODE_DEPENDS_ON_ALL_LEAVES, NULL), "add host task");
    cmdgraph_sycl_cg_destroy(cg);

    cmdgraph_sycl_exec *exec = NULL;
    check(cmdgraph_sycl_graph_finalize(g, CMDGRAPH_SYCL_FINALIZE_UPDATABLE, &exec), "finalize");

    static float results[2 * N + 1];
    cmdgraph_sycl_event *e = NULL;
    check(cmdgraph_sycl_queue_graph(q, exec, NULL, 0, &e), "run 1");
    check(cmdgraph_sycl_event_wait(e), "wait 1");
    cmdgraph_sycl_event_destroy(e);
    check(cmdgraph_sycl_memcpy(ctx, results, out, sizeof(float) * N), "read run 1");

    cmdgraph_sycl_arg a1 = cmdgraph_sycl_arg_f32(in[1]);
    check(cmdgraph_sycl_dynparam_update(a, &a1), "update a");
    const cmdgraph_sycl_node *updated[1] = {axpy};
    check(cmdgraph_sycl_exec_update_nodes(exec, updated, 1), "update exec");
    check(cmdgraph_sycl_queue_graph(q, exec, NULL, 0, NULL), "run 2");
    check(cmdgraph_sycl_queue_wait(q), "wait 2");
    check(cmdgraph_sycl_memcpy(ctx, &results[N], out, sizeof(float) * N), "read run 2");
    check(cmdgraph_sycl_memcpy(ctx, &results[2 * N], flag, sizeof(float)), "read flag");

    snprintf(path, sizeof path, "%s/outputs.bin", argv[1]);
    f = fopen(path, "wb");
    if (!f || fwrite(results, sizeof(float), 2 * N + 1, f) != 2 * N + 1) {
        fprintf(stderr, "saxpy: cannot write %s\n", path);
        return 1;
    }
    fclose(f);

    cmdgraph_sycl_exec_destroy(exec);
    cmdgraph_sycl_node_destroy(fill);
    cmdgraph_sycl_node_destroy(axpy);
    cmdgraph_sycl_node_destroy(copy);
    cmdgraph_sycl_dynparam_destroy(a);
    cmdgraph_sycl_graph_destroy(g);
    check(cmdgraph_sycl_free(ctx, x), "free");
    cmdgraph_sycl_queue_destroy(q);
    cmdgraph_sycl_context_destroy(ctx);
    printf("done.\n");
    return 0;
}
