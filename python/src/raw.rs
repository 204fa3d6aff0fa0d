//! The memory of NumPy arrays by address. The limited API of CPython 3.9 (the abi3 wheel) has
//! no buffer protocol, so an array's data pointer and byte count come from its
//! `__array_interface__` (after `cmdgraph/_arrays.py` checked its dtype, contiguity and size
//! against the memory object), and these are the only places that make Rust slices of them:
//! inputs go from the array straight into the executor's staging buffer and outputs from the
//! staging buffer straight into a new array, with no copy in between (docs/python.md).
#![allow(unsafe_code)]

use pyo3::prelude::*;

/// An array's data address and byte count, from `__array_interface__` and `nbytes`.
fn address(array: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    let interface = array.getattr("__array_interface__")?;
    let (addr, _read_only): (usize, bool) = interface.get_item("data")?.extract()?;
    let len: usize = array.getattr("nbytes")?.extract()?;
    Ok((addr, len))
}

/// The bytes of a C-contiguous NumPy array, borrowed for as long as `array` is.
///
/// The caller holds the GIL while it uses the slice: NumPy frees or reallocates an array's
/// data only when the array dies or is resized, and neither can happen while this reference
/// keeps it alive and no other Python code runs (a resize of a referenced array is refused).
pub fn bytes<'a>(array: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    let (addr, len) = address(array)?;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: `addr` is the start of the array's data and `len` its `nbytes` (contiguous,
    // checked by `_arrays.prepare`); the data lives as long as `array` (borrowed for 'a) and
    // is not freed or moved while the GIL is held (above).
    Ok(unsafe { std::slice::from_raw_parts(addr as *const u8, len) })
}

/// The writable bytes of a C-contiguous NumPy array this code just created and has not
/// handed to Python yet.
///
/// Nothing else holds a reference to a new array, so it may be written with the GIL
/// released.
pub fn fresh_bytes_mut<'a>(array: &'a Bound<'_, PyAny>) -> PyResult<RawMut<'a>> {
    let (addr, len) = address(array)?;
    Ok(RawMut { addr, len, _array: std::marker::PhantomData })
}

/// A new array's data, to be written (possibly with the GIL released) before the array is
/// returned to Python; it cannot outlive the array's reference.
pub struct RawMut<'a> {
    addr: usize,
    len: usize,
    _array: std::marker::PhantomData<&'a ()>,
}

impl RawMut<'_> {
    /// The data as a mutable slice.
    pub fn slice(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `addr`/`len` describe a new, C-contiguous, writable array (created by
        // `_arrays.empty`) that no other code can reach until it is returned, and its
        // owner (a `Bound` the caller keeps) outlives this value; `&mut self` makes the
        // slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }
}
