/*
 * interop.c: a C application with its own Vulkan runs a precompiled graph inside it.
 *
 *   cmdgraph compile examples/capi/interop.cgir -o interop.cgb
 *   cc -std=c11 -Wall -Wextra -Werror -I capi/include examples/capi/interop.c \
 *      -L target/debug -lcmdgraph -lvulkan -Wl,-rpath,target/debug -o interop
 *   ./interop interop.cgb out.txt [--validation]
 *
 * The application creates the instance (with the validation layer and synchronization
 * validation when asked, and its own messenger), the device (timeline semaphores and
 * synchronization2 on), a queue, one host-visible buffer holding @x, @y and @out at aligned
 * offsets with guard bytes between them, and two timeline semaphores. The executor runs on
 * those objects (cmdgraph_executor_create_vulkan), uses the buffer in place
 * (cmdgraph_executor_import_buffer) and orders its run with the semaphores
 * (cmdgraph_exec_run_with): the run is submitted first, the inputs are written through the
 * application's own mapping afterwards, and only then is `ready` signalled. The result is read
 * through the mapping too. Writes "out <hex bytes>" to the output file; exits 1 on any error,
 * on a changed guard byte, and on any validation message. capi/tests/c_example.rs compares
 * the output with the reference interpreter.
 */
#include <cmdgraph.h>
#include <vulkan/vulkan.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4096, GUARD = 0xA5 };

static unsigned messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)severity, (void)type, (void)user;
    fprintf(stderr, "validation: %s\n", data->pMessage);
    messages++;
    return VK_FALSE;
}

static void die(const char *what, const char *message) {
    fprintf(stderr, "interop: %s: %s\n", what, message);
    exit(1);
}

#define VK(call)                                                         \
    do {                                                                 \
        VkResult r_ = (call);                                            \
        if (r_ != VK_SUCCESS) {                                          \
            char code_[32];                                              \
            snprintf(code_, sizeof code_, "VkResult %d", (int)r_);       \
            die(#call, code_);                                           \
        }                                                                \
    } while (0)

#define CG(call, message)                                                \
    do {                                                                 \
        if ((call) != CMDGRAPH_OK) die(#call, (message));                \
    } while (0)

/* Floats k / 2^23 - 1 in [-1, 1) from a 32-bit LCG (the test computes the same). */
static void random_floats(uint32_t seed, float *out, size_t n) {
    uint32_t state = seed;
    for (size_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        out[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
    }
}

static uint64_t handle(const void *h) { return (uint64_t)(uintptr_t)h; }

int main(int argc, char **argv) {
    if (argc < 3) die("usage", "interop BUNDLE OUTPUT [--validation]");
    int validation = argc > 3 && strcmp(argv[3], "--validation") == 0;

    /* The application's Vulkan. */
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "interop", 1, NULL, 0, VK_API_VERSION_1_3};
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, NULL, 1, enables, 0, NULL};
    VkInstanceCreateInfo ii = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, validation ? &vf : NULL, 0, &app,
                               validation ? 1u : 0u, layers, validation ? 1u : 0u, exts};
    VkInstance instance;
    VK(vkCreateInstance(&ii, NULL, &instance));
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
    if (validation) {
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            on_message, NULL};
        VK(create_messenger(instance, &mi, NULL, &messenger));
    }
    /* The first Vulkan 1.3 device with a compute queue, discrete GPUs first. */
    uint32_t count = 0;
    VK(vkEnumeratePhysicalDevices(instance, &count, NULL));
    VkPhysicalDevice devices[16];
    if (count > 16) count = 16;
    VK(vkEnumeratePhysicalDevices(instance, &count, devices));
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    uint32_t family = 0;
    int best = 99;
    for (uint32_t i = 0; i < count; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devices[i], &p);
        int rank = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 0
                   : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 1
                                                                            : 2;
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &nf, NULL);
        VkQueueFamilyProperties fams[16];
        if (nf > 16) nf = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &nf, fams);
        for (uint32_t f = 0; f < nf; f++) {
            if ((fams[f].queueFlags & VK_QUEUE_COMPUTE_BIT) && p.apiVersion >= VK_API_VERSION_1_3 && rank < best) {
                physical = devices[i], family = f, best = rank;
                break;
            }
        }
    }
    if (physical == VK_NULL_HANDLE) die("device", "no Vulkan 1.3 device with a compute queue");
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical, &props);
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                            .synchronization2 = VK_TRUE};
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &f13, .timelineSemaphore = VK_TRUE};
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, family, 1, &priority};
    VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f12, 0, 1, &qi, 0, NULL, 0, NULL, NULL};
    VkDevice device;
    VK(vkCreateDevice(physical, &di, NULL, &device));
    VkQueue queue;
    vkGetDeviceQueue(device, family, 0, &queue);

    /* One host-visible buffer: @x, @y, @out at aligned offsets, guard bytes between. */
    VkDeviceSize bytes = N * sizeof(float), align = props.limits.minStorageBufferOffsetAlignment;
    if (align < 4) align = 4;
    VkDeviceSize step = (bytes + 256 + align - 1) / align * align, total = 3 * step;
    VkDeviceSize offsets[3] = {0, step, 2 * step};
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, total,
                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
    VkBuffer buffer;
    VK(vkCreateBuffer(device, &bi, NULL, &buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(physical, &mp);
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) die("memory", "no host-visible coherent memory type");
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size, type};
    VkDeviceMemory memory;
    VK(vkAllocateMemory(device, &ai, NULL, &memory));
    VK(vkBindBufferMemory(device, buffer, memory, 0));
    unsigned char *mapped;
    VK(vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, (void **)&mapped));
    memset(mapped, GUARD, total);
    VkSemaphoreTypeCreateInfo ti = {VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, NULL, VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo si = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &ti, 0};
    VkSemaphore ready, done;
    VK(vkCreateSemaphore(device, &si, NULL, &ready));
    VK(vkCreateSemaphore(device, &si, NULL, &done));

    /* The graph, on those objects. */
    cmdgraph_bundle *bundle = NULL;
    CG(cmdgraph_bundle_open(argv[1], &bundle), cmdgraph_last_error());
    cmdgraph_vulkan_objects objects = {
        (cmdgraph_get_instance_proc_addr)vkGetInstanceProcAddr, instance, physical, device, queue, family, &di};
    cmdgraph_executor *ex = NULL;
    CG(cmdgraph_executor_create_vulkan(bundle, &objects, NULL, &ex), cmdgraph_bundle_last_error(bundle));
    cmdgraph_bundle_destroy(bundle);
    const char *names[3] = {"x", "y", "out"};
    for (int i = 0; i < 3; i++)
        CG(cmdgraph_executor_import_buffer(ex, names[i], handle(buffer), offsets[i], bytes),
           cmdgraph_executor_last_error(ex));
    cmdgraph_exec *exec = NULL;
    CG(cmdgraph_executor_finalize(ex, "g", NULL, &exec), cmdgraph_executor_last_error(ex));
    cmdgraph_semaphore_value wait = {handle(ready), 1}, signal = {handle(done), 1};
    CG(cmdgraph_exec_run_with(exec, &wait, 1, &signal, 1), cmdgraph_exec_last_error(exec));

    /* The run is submitted; it may not start before `ready`: write the inputs now. */
    float *x = malloc(bytes), *y = malloc(bytes);
    if (!x || !y) die("malloc", "out of memory");
    random_floats(11, x, N);
    random_floats(12, y, N);
    memcpy(mapped + offsets[0], x, bytes);
    memcpy(mapped + offsets[1], y, bytes);
    uint64_t one = 1;
    VkSemaphoreWaitInfo wi = {VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, NULL, 0, 1, &done, &one};
    if (vkWaitSemaphores(device, &wi, 200ull * 1000 * 1000) != VK_TIMEOUT)
        die("order", "the run finished before the application signalled it could start");
    VkSemaphoreSignalInfo sig = {VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, NULL, ready, 1};
    VK(vkSignalSemaphore(device, &sig));
    VK(vkWaitSemaphores(device, &wi, 60ull * 1000 * 1000 * 1000));

    /* The result, through the application's own mapping. */
    FILE *out = fopen(argv[2], "w");
    if (!out) die("fopen", argv[2]);
    fprintf(out, "out ");
    for (VkDeviceSize i = 0; i < bytes; i++) fprintf(out, "%02x", mapped[offsets[2] + i]);
    fprintf(out, "\n");
    fclose(out);
    for (VkDeviceSize i = 0; i < total; i++) {
        int inside = 0;
        for (int j = 0; j < 3; j++) inside |= i >= offsets[j] && i < offsets[j] + bytes;
        if (!inside && mapped[i] != GUARD) die("guard", "a byte outside the imported ranges changed");
    }

    cmdgraph_exec_destroy(exec);
    cmdgraph_executor_destroy(ex);
    /* Everything below is the application's, untouched by the executor. */
    vkDestroySemaphore(device, ready, NULL);
    vkDestroySemaphore(device, done, NULL);
    vkUnmapMemory(device, memory);
    vkDestroyBuffer(device, buffer, NULL);
    vkFreeMemory(device, memory, NULL);
    vkDestroyDevice(device, NULL);
    if (messenger != VK_NULL_HANDLE) destroy_messenger(instance, messenger, NULL);
    vkDestroyInstance(instance, NULL);
    free(x);
    free(y);
    if (messages) die("validation", "the layer reported messages (above)");
    return 0;
}
