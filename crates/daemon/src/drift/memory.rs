//! Gives memory freed after a burst back to the system.
//!
//! What the engine keeps per object is small (packed bytes), but a cold start or a reload
//! allocates and frees a JSON tree per object, and glibc's malloc keeps the freed pages
//! mapped: measured with `driftd bench` at 10,000 objects, `driftd serve` held 149 MiB of
//! RSS, 62 MiB after a `malloc_trim`. So the engine trims after its first lists, after each
//! desired-state reload, and once a minute. `driftd` allocates with mimalloc, which returns
//! freed pages by itself after a short delay; it is asked to collect at once too, and
//! glibc's heap (SQLite's) is trimmed.

/// Returns free heap pages to the system now (mimalloc's and glibc's).
pub fn release_free_memory() {
    // SAFETY: mi_collect takes no pointer; it frees only pages mimalloc holds empty.
    unsafe { libmimalloc_sys::mi_collect(true) };
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
}
