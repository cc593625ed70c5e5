//! Per-item work spread over the machine's cores, results in input order.
//!
//! A commit validates and serializes every object on its own, and on a 2-core machine a
//! commit of 100,000 objects ran at one core's speed; the order of results is kept, so the
//! first error reported is the one a sequential pass would have met first. The drift engine
//! compares a burst of watch events the same way, so its one thread is not what limits it.

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Below this many items a second thread costs more than it saves.
const MIN_ITEMS_PER_THREAD: usize = 256;

/// `items.iter().map(f).collect()`, with `items` cut into one contiguous run per core.
pub fn map_ordered<'a, T: Sync, R: Send>(items: &'a [T], f: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    map_owned(items.iter().collect(), MIN_ITEMS_PER_THREAD, f)
}

/// `items.into_iter().map(f).collect()`, with `items` cut into one contiguous run per core
/// of at least `min_per_thread` items. Items move into the threads, so what `f` leaves of
/// them is freed there too; the calling thread takes the first run itself.
pub fn map_owned<T: Send, R: Send>(
    mut items: Vec<T>,
    min_per_thread: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let threads = threads_for(items.len(), min_per_thread.max(1));
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let run = items.len().div_ceil(threads);
    let mut runs = Vec::with_capacity(threads);
    while items.len() > run {
        runs.push(items.split_off(items.len() - run));
    }
    runs.reverse();
    let f = &f;
    std::thread::scope(|scope| {
        let workers: Vec<_> = runs
            .into_iter()
            .map(|run| scope.spawn(move || run.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut results: Vec<R> = items.into_iter().map(f).collect();
        for worker in workers {
            results.extend(
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        results
    })
}

/// Threads for `len` items: one per core, each with at least `min_per_thread` items.
fn threads_for(len: usize, min_per_thread: usize) -> usize {
    cores().min(len / min_per_thread).max(1)
}

/// How long the core count is trusted before it is asked again.
const CORES_TTL: Duration = Duration::from_secs(10);

/// The cores this process may use, asked at most every [`CORES_TTL`]: in a container,
/// `available_parallelism` opens and reads the cgroup's files each time, and the drift engine
/// asks once per burst of watch events (1-2% of its thread at 100,000 objects, issue #11).
/// Asked again now and then so a pod resized in place gets its new share.
fn cores() -> usize {
    static CACHED: Mutex<Option<(Instant, usize)>> = Mutex::new(None);
    let mut cached = CACHED.lock().unwrap_or_else(PoisonError::into_inner);
    match *cached {
        Some((asked, cores)) if asked.elapsed() < CORES_TTL => cores,
        _ => {
            let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
            *cached = Some((Instant::now(), cores));
            cores
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_input_order_whatever_the_thread_count() {
        for n in [0, 1, 255, 256, 513, 10_007] {
            let items: Vec<usize> = (0..n).collect();
            let doubled = map_ordered(&items, |i| i * 2);
            assert_eq!(
                doubled,
                items.iter().map(|i| i * 2).collect::<Vec<_>>(),
                "n={n}"
            );
        }
    }

    #[test]
    fn owned_items_come_back_in_input_order_whatever_the_run_length() {
        for (n, min) in [(0, 1), (1, 1), (7, 1), (64, 16), (1_001, 8), (10_007, 256)] {
            let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            let lengths = map_owned(items.clone(), min, |s| s.len());
            assert_eq!(
                lengths,
                items.iter().map(String::len).collect::<Vec<_>>(),
                "n={n} min={min}"
            );
        }
    }

    #[test]
    fn owned_items_are_spread_over_threads_when_there_are_enough() {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let items: Vec<usize> = (0..4_000).collect();
        let threads: std::collections::HashSet<_> =
            map_owned(items, 16, |_| std::thread::current().id())
                .into_iter()
                .collect();
        assert_eq!(threads.len(), cores.min(4_000 / 16));
        let few = map_owned(vec![1, 2, 3], 16, |_| std::thread::current().id());
        assert_eq!(
            few,
            [std::thread::current().id(); 3],
            "too few for a second thread"
        );
    }

    #[test]
    fn a_panic_in_one_item_reaches_the_caller() {
        let items: Vec<usize> = (0..2_000).collect();
        let caught = std::panic::catch_unwind(|| {
            map_ordered(&items, |&i| {
                assert!(i != 1_500, "item 1500");
                i
            })
        });
        assert!(caught.is_err());
        let caught = std::panic::catch_unwind(|| {
            map_owned((0..2_000).collect(), 16, |i: usize| {
                assert!(i != 1_500, "item 1500");
                i
            })
        });
        assert!(caught.is_err());
    }
}
