//! Gives memory freed after a burst back to the system, and keeps pages small.
//!
//! What the engine keeps per object is small (packed bytes), but a cold start or a reload
//! allocates and frees a JSON tree per object, and glibc's malloc keeps the freed pages
//! mapped, more than doubling RSS. So the engine trims after its first lists, after each
//! desired-state reload, and once a minute. `driftd` allocates with mimalloc, which returns
//! freed pages by itself after a delay ([`return_freed_pages_promptly`] shortens it); it is
//! asked to collect at once too, and glibc's heap (SQLite's) is trimmed.

/// mimalloc's `mi_option_purge_delay` (its index in `mimalloc.h`'s `mi_option_e`; the Rust
/// bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps freed pages before giving them back, in ms: mimalloc v2's
/// default. v3's is much longer, and a cold start frees the trees of whole list pages
/// faster than that, so a longer delay raises the peak of RSS at no gain in events per
/// second.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Asks the kernel for small pages only, for the whole process. mimalloc advises
/// transparent huge pages on its arenas, and the first touch of each zeroes 2 MiB: the
/// kernel's page clearing then takes a large share of the CPU, and even an empty `driftd
/// serve` holds about twice the RSS. Call it first.
pub fn small_pages_only() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integers only; it sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Has mimalloc give freed pages back within [`PURGE_DELAY_MS`] (unless
/// `MIMALLOC_PURGE_DELAY` says otherwise), for the daemon: its peak RSS is what a pod's
/// memory limit must hold. Short-lived commands keep mimalloc's default.
pub fn return_freed_pages_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads options as it runs.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The index names the purge delay: it holds v3's documented default (1,000 ms) until
    /// someone sets it, so a bindings upgrade that renumbers the options fails here.
    #[test]
    fn the_option_set_is_the_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads one integer option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert!(
            delay == 1000 || delay == PURGE_DELAY_MS,
            "option {MI_OPTION_PURGE_DELAY} is {delay}, not mimalloc's purge delay"
        );
    }
}
