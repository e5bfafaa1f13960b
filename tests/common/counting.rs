//! A counting global allocator for the test binaries that measure memory: it forwards to the
//! system allocator and keeps the bytes live now and at the peak. A binary installs it with
//! `#[global_allocator] static ALLOCATOR: Counting = Counting;` and should hold one test, so that
//! no other test allocates meanwhile.
//!
//! Implementing `GlobalAlloc` needs `unsafe`; the library itself forbids unsafe code.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The allocator.
pub struct Counting;

/// Bytes allocated now.
pub static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// The most bytes allocated at once since the last [`reset`].
pub static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards the caller's layout to the system allocator unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

/// Bytes allocated now.
pub fn current() -> usize {
    CURRENT.load(Ordering::SeqCst)
}

/// Bytes allocated at the peak since the last reset, above `baseline`.
pub fn growth_since(baseline: usize) -> usize {
    PEAK.load(Ordering::SeqCst).saturating_sub(baseline)
}

/// Starts a new peak from what is allocated now, and returns that.
pub fn reset() -> usize {
    let now = CURRENT.load(Ordering::SeqCst);
    PEAK.store(now, Ordering::SeqCst);
    now
}
