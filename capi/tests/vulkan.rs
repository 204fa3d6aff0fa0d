//! The C API inside the application's Vulkan: an executor made with
//! `cmdgraph_executor_create_vulkan` on the test's own instance, device and queue (its own
//! validation messenger, synchronization validation on), memory imported from the test's
//! `VkBuffer` at aligned offsets with guard bytes between, a run ordered by the test's
//! timeline semaphores through `cmdgraph_exec_run_with`, results read through the test's own
//! mapping and compared with the reference interpreter bit for bit.
#![allow(unsafe_code)]

#[path = "../../executor/tests/common/app_vulkan.rs"]
mod app_vulkan;
mod support;

use ::cmdgraph_executor::ash::vk::{self, Handle};
use app_vulkan::AppVulkan;
use cmdgraph::bundle::*;
use cmdgraph::exec::*;
use cmdgraph::executor::*;
use cmdgraph::vulkan::*;
use cmdgraph::*;
use cmdgraph_interp::Interpreter;
use cmdgraph_status::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::time::Duration;

const N: usize = 4096;
const BYTES: u64 = (N * 4) as u64;
const GUARD: u8 = 0x5A;

const IR: &str = "
kernel @scale_add(%x: buf<f32, read>, %y: buf<f32, read>, %out: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %m = mul %a, %xv
  %r = add %m, %yv
  store %out[%i], %r
}

usm @x : f32[4096]
usm @y : f32[4096]
usm @out : f32[4096]

graph @g {
  %k = kernel @scale_add range(4096) args(@x, @y, @out, 0.70710677)
}
";

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn text(p: *const c_char) -> String {
    // SAFETY: the library returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn objects(app: &AppVulkan, info: &vk::DeviceCreateInfo<'_>) -> cmdgraph_vulkan_objects {
    let gipa = app.entry.static_fn().get_instance_proc_addr;
    cmdgraph_vulkan_objects {
        // SAFETY: the same C signature with VkInstance as a pointer-sized handle.
        get_instance_proc_addr: Some(unsafe {
            std::mem::transmute::<
                vk::PFN_vkGetInstanceProcAddr,
                unsafe extern "C" fn(*mut c_void, *const c_char) -> Option<unsafe extern "C" fn()>,
            >(gipa)
        }),
        instance: app.instance.handle().as_raw() as *mut c_void,
        physical_device: app.physical.as_raw() as *mut c_void,
        device: app.device.handle().as_raw() as *mut c_void,
        queue: app.queue.as_raw() as *mut c_void,
        queue_family: app.family,
        device_create_info: (info as *const vk::DeviceCreateInfo<'_>).cast(),
    }
}

fn assert_no_app_messages() {
    let m = AppVulkan::take_messages();
    assert!(m.is_empty(), "validation messages on the application's messenger:\n{}", m.join("\n"));
}

#[test]
fn a_graph_runs_on_the_applications_device_buffer_and_semaphores_through_the_c_api() {
    let app = AppVulkan::new();
    let step = (BYTES + 256).next_multiple_of(app.min_align);
    let (off, total) = ([0, step, 2 * step], 3 * step);
    let buf = app.buffer(total);
    buf.write(0, &vec![GUARD; total as usize]);
    let info = app.create_info();
    let objs = objects(&app, &info);

    let bytes = support::compile(IR);
    let mut b = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b) }, CMDGRAPH_OK);
    let mut ex = null_mut();
    // SAFETY: live bundle; the test's live Vulkan objects, kept past the executor.
    let st = unsafe { cmdgraph_executor_create_vulkan(b, &objs, null(), &mut ex) };
    // SAFETY: live bundle.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_bundle_last_error(b) }));
    // SAFETY: the bundle is copied into the executor.
    unsafe { cmdgraph_bundle_destroy(b) };
    for (name, o) in ["x", "y", "out"].iter().zip(off) {
        // SAFETY: live executor; the test's storage/transfer buffer, alive past the executor.
        let st = unsafe { cmdgraph_executor_import_buffer(ex, c(name).as_ptr(), buf.buffer.as_raw(), o, BYTES) };
        // SAFETY: live executor.
        assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    }
    // Refused: misaligned, and a NULL name.
    // SAFETY: live executor; refused before use.
    let st = unsafe { cmdgraph_executor_import_buffer(ex, c("x").as_ptr(), buf.buffer.as_raw(), 2, BYTES) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // SAFETY: live executor.
    assert!(text(unsafe { cmdgraph_executor_last_error(ex) }).contains("minStorageBufferOffsetAlignment"));
    // SAFETY: live executor; NULL name refused.
    let st = unsafe { cmdgraph_executor_import_buffer(ex, null(), buf.buffer.as_raw(), 0, BYTES) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);

    let mut e = null_mut();
    // SAFETY: live executor, valid name and out-pointer.
    let st = unsafe { cmdgraph_executor_finalize(ex, c("g").as_ptr(), null(), &mut e) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    let (ready, done) = (app.timeline(), app.timeline());
    let waits = [cmdgraph_semaphore_value { semaphore: ready.as_raw(), value: 1 }];
    let signals = [cmdgraph_semaphore_value { semaphore: done.as_raw(), value: 1 }];
    // A count without a list is refused.
    // SAFETY: live executable; refused before use.
    assert_eq!(unsafe { cmdgraph_exec_run_with(e, null(), 1, null(), 0) }, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // SAFETY: live executable; the test's timeline semaphores, values above their current.
    let st = unsafe { cmdgraph_exec_run_with(e, waits.as_ptr(), 1, signals.as_ptr(), 1) };
    // SAFETY: live executable.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_exec_last_error(e) }));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(app.value(done), 0, "the run did not wait for the application's semaphore");
    let (x, y) = (support::random_floats(7, N), support::random_floats(8, N));
    buf.write(off[0], &support::f32_bytes(&x));
    buf.write(off[1], &support::f32_bytes(&y));
    app.signal(ready, 1);
    assert!(app.wait(done, 1), "the run never signalled the application's semaphore");

    let module = cmdgraph_ir::text::parse(IR).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.bind_as("x", &x).unwrap();
    it.bind_as("y", &y).unwrap();
    let ie = it.finalize("g").unwrap();
    it.run(ie).unwrap();
    let want = support::f32_bytes(&it.read_as::<f32>("out").unwrap());
    assert_eq!(buf.read(off[2], BYTES), want);
    let all = buf.read(0, total);
    for (i, v) in all.iter().enumerate() {
        let i = i as u64;
        let inside = off.iter().any(|&o| (o..o + BYTES).contains(&i));
        assert!(inside || *v == GUARD, "byte {i} outside the imported ranges changed");
    }

    // SAFETY: live handles, not used afterwards.
    unsafe {
        cmdgraph_exec_destroy(e);
        cmdgraph_executor_destroy(ex);
    }
    // Nothing of the application's was destroyed.
    app.signal(ready, 2);
    assert_eq!(app.value(ready), 2);
    app.free_semaphore(ready);
    app.free_semaphore(done);
    app.free(buf);
    assert_no_app_messages();
}

#[test]
fn the_applications_objects_are_checked_before_use() {
    let app = AppVulkan::new();
    let info = app.create_info();
    let bytes = support::compile(IR);
    let mut b = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b) }, CMDGRAPH_OK);
    let create = |objs: *const cmdgraph_vulkan_objects| {
        let mut ex = null_mut();
        // SAFETY: live bundle; the objects are refused before any is used.
        let st = unsafe { cmdgraph_executor_create_vulkan(b, objs, null(), &mut ex) };
        assert!(ex.is_null());
        // SAFETY: live bundle.
        (st, text(unsafe { cmdgraph_bundle_last_error(b) }))
    };
    let (st, m) = create(null());
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("Vulkan objects pointer is NULL"), "{m}");
    let mut objs = objects(&app, &info);
    objs.device_create_info = null();
    let (st, m) = create(&objs);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("device_create_info is NULL"), "{m}");
    // A structure that is not a VkDeviceCreateInfo.
    let wrong = vk::SemaphoreCreateInfo::default();
    objs.device_create_info = (&wrong as *const vk::SemaphoreCreateInfo<'_>).cast();
    let (st, m) = create(&objs);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("sType"), "{m}");
    // A device made without timeline semaphores (as its create info says).
    let bare = vk::DeviceCreateInfo::default();
    objs.device_create_info = (&bare as *const vk::DeviceCreateInfo<'_>).cast();
    let (st, m) = create(&objs);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("timelineSemaphore"), "{m}");
    objs = objects(&app, &info);
    objs.instance = null_mut();
    let (st, m) = create(&objs);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("must not be null"), "{m}");
    // SAFETY: live bundle, not used afterwards.
    unsafe { cmdgraph_bundle_destroy(b) };
    assert_no_app_messages();
}
