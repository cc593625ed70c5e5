//! Gives memory freed after a burst back to the system, and keeps pages small.
//!
//! What the engine keeps per object is small (packed bytes), but a cold start or a reload
//! allocates and frees a JSON tree per object, and glibc's malloc keeps the freed pages
//! mapped: measured with `driftd bench` at 10,000 objects, `driftd serve` held 149 MiB of
//! RSS, 62 MiB after a `malloc_trim`. So the engine trims after its first lists, after each
//! desired-state reload, and once a minute. `driftd` allocates with mimalloc, which returns
//! freed pages by itself after a short delay; it is asked to collect at once too, and
//! glibc's heap (SQLite's) is trimmed.

/// Asks the kernel for small pages only, for the whole process. mimalloc advises
/// transparent huge pages on its arenas, and the first touch of each zeroes 2 MiB: `perf` on
/// the engine bench at 100,000 objects put the kernel's `clear_page_erms` at 31% of all CPU,
/// and an empty `driftd serve` peaked at 72 MiB of RSS instead of 35 MiB. Call it first.
pub fn small_pages_only() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integers only; it sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

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
