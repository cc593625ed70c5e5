//! Per-item work spread over the machine's cores, results in input order.
//!
//! A commit validates and serializes every object on its own, and on a 2-core machine a
//! commit of 100,000 objects ran at one core's speed; the order of results is kept, so the
//! first error reported is the one a sequential pass would have met first. The drift engine
//! compares a burst of watch events the same way, so its one thread is not what limits it.
//!
//! Why not `rayon`: measured against it in one process, interleaved, on these workloads
//! (`cargo bench -p driftd-core --bench par --profile par-bench`, 2 threads, 3 runs of 9-15
//! rounds, 2026-12-07 at 901f6d6), rayon took as long on `map_ordered` (median ratio
//! rayon/par 1.05-1.08, slower in 19 of 39 rounds) and `map_consumed` (1.00-1.02, 22 of 39)
//! and longer on `map_owned` (1.09-1.37, slower in 31 of 39 rounds): no gain to pay a
//! dependency for, and a loss on one. Every run: `benches/RESULTS.md`.

use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
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

/// `items.into_iter().map(f).for_each(consume)` on every core: the calling thread hands
/// each result to `consume` in input order as soon as it and those before it are ready,
/// while the other threads go on mapping. Items are taken in chunks of `chunk` by whichever
/// thread is free, so a thread the system holds back delays only the chunk it took, and the
/// caller maps chunks too while it has nothing to consume. With [`map_owned`] the caller
/// consumed only once every thread was done: the drift engine's thread waited for the other
/// half of a burst 12% of the time at 100,000 objects, then published alone.
/// Items are freed in the thread that maps them; a panic in `f` reaches the caller when it
/// comes to that item's chunk.
pub fn map_consumed<T: Send, R: Send>(
    items: Vec<T>,
    chunk: usize,
    f: impl Fn(T) -> R + Sync,
    mut consume: impl FnMut(R),
) {
    let chunk = chunk.max(1);
    let threads = threads_for(items.len(), chunk);
    if threads == 1 {
        return items.into_iter().map(f).for_each(consume);
    }
    let chunks = Chunks::new(items, chunk);
    let (chunks, f) = (&chunks, &f);
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(move || while chunks.map_next(f) {});
        }
        for i in 0..chunks.inputs.len() {
            let mapped = loop {
                if let Some(mapped) = chunks.take(i) {
                    break mapped;
                }
                if !chunks.map_next(f) {
                    break chunks.wait_for(i);
                }
            };
            match mapped {
                Ok(results) => results.into_iter().for_each(&mut consume),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
}

/// The chunks of one [`map_consumed`] call: each taken once, its results kept until consumed.
struct Chunks<T, R> {
    inputs: Vec<Mutex<Option<Vec<T>>>>,
    /// Results by chunk (a panic's payload if mapping it panicked), until consumed.
    outputs: Mutex<Vec<Option<std::thread::Result<Vec<R>>>>>,
    /// Signalled when a chunk's results are in `outputs`.
    mapped: Condvar,
    /// The next chunk to take.
    next: AtomicUsize,
}

impl<T, R> Chunks<T, R> {
    fn new(items: Vec<T>, chunk: usize) -> Self {
        let mut items = items.into_iter();
        let inputs: Vec<_> = std::iter::from_fn(|| {
            let next: Vec<T> = items.by_ref().take(chunk).collect();
            (!next.is_empty()).then(|| Mutex::new(Some(next)))
        })
        .collect();
        Chunks {
            outputs: Mutex::new(std::iter::repeat_with(|| None).take(inputs.len()).collect()),
            inputs,
            mapped: Condvar::new(),
            next: AtomicUsize::new(0),
        }
    }

    /// Takes the next chunk nobody took and maps it; false when every chunk is taken.
    fn map_next(&self, f: &impl Fn(T) -> R) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(input) = self.inputs.get(i) else {
            return false;
        };
        let input = lock(input).take().expect("each chunk is taken once");
        let mapped = std::panic::catch_unwind(AssertUnwindSafe(|| {
            input.into_iter().map(f).collect::<Vec<R>>()
        }));
        lock(&self.outputs)[i] = Some(mapped);
        self.mapped.notify_all();
        true
    }

    /// The results of chunk `i` if it is mapped.
    fn take(&self, i: usize) -> Option<std::thread::Result<Vec<R>>> {
        lock(&self.outputs)[i].take()
    }

    /// The results of chunk `i`, once another thread has mapped it.
    fn wait_for(&self, i: usize) -> std::thread::Result<Vec<R>> {
        let mut outputs = lock(&self.outputs);
        loop {
            if let Some(mapped) = outputs[i].take() {
                return mapped;
            }
            outputs = self
                .mapped
                .wait(outputs)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A lock nobody can poison: mapping runs under `catch_unwind`, outside every lock.
fn lock<V>(mutex: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Threads for `len` items: one per core, each with at least `min_per_thread` items.
fn threads_for(len: usize, min_per_thread: usize) -> usize {
    cores().min(len / min_per_thread).max(1)
}

/// How long the core count is trusted before it is asked again.
const CORES_TTL: Duration = Duration::from_secs(10);

/// The cores this process may use, asked at most every [`CORES_TTL`]: in a container,
/// `available_parallelism` opens and reads the cgroup's files each time, and the drift engine
/// asks once per burst of watch events (1-2% of its thread at 100,000 objects).
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
    use std::sync::atomic::AtomicBool;

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
    fn consumed_results_come_in_input_order_on_the_calling_thread() {
        let caller = std::thread::current().id();
        for (n, chunk) in [(0, 1), (1, 1), (7, 2), (64, 16), (1_001, 8), (10_007, 16)] {
            let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            let mut consumed = Vec::new();
            let mut mapped_by = std::collections::HashSet::new();
            map_consumed(
                items.clone(),
                chunk,
                |s| (s.len(), std::thread::current().id()),
                |(len, thread)| {
                    assert_eq!(
                        std::thread::current().id(),
                        caller,
                        "consumed by the caller"
                    );
                    consumed.push(len);
                    mapped_by.insert(thread);
                },
            );
            assert_eq!(
                consumed,
                items.iter().map(String::len).collect::<Vec<_>>(),
                "n={n} chunk={chunk}"
            );
            let cores = cores();
            if n / chunk >= cores {
                assert!(
                    mapped_by.len() <= cores,
                    "n={n}: one thread per core at most"
                );
            } else if n > 0 {
                assert_eq!(mapped_by.len(), 1, "n={n}: too few for a second thread");
            }
        }
    }

    #[test]
    fn the_caller_consumes_while_other_threads_still_map() {
        if cores() < 2 {
            return; // one thread maps and consumes everything
        }
        // Other threads map item 1 and later only once the caller has consumed item 0
        // (waiting at most 10 s); the caller maps only once another thread has begun.
        let caller = std::thread::current().id();
        let (begun, consumed_first) = (AtomicBool::new(false), AtomicBool::new(false));
        let wait_for = |flag: &AtomicBool| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::yield_now();
            }
        };
        let mut by_others = Vec::new();
        map_consumed(
            (0..64).collect(),
            1,
            |i: usize| {
                let other = std::thread::current().id() != caller;
                if other {
                    begun.store(true, Ordering::SeqCst);
                    if i > 0 {
                        wait_for(&consumed_first);
                    }
                } else {
                    wait_for(&begun);
                }
                (i, other, consumed_first.load(Ordering::SeqCst))
            },
            |(i, other, after_first)| {
                consumed_first.store(true, Ordering::SeqCst);
                if other && i > 0 {
                    by_others.push((i, after_first));
                }
            },
        );
        assert!(
            by_others.iter().all(|(_, after_first)| *after_first),
            "mapped before item 0 was consumed: {by_others:?}"
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
        let mut consumed = 0;
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            map_consumed(
                (0..2_000).collect(),
                16,
                |i: usize| {
                    assert!(i != 1_500, "item 1500");
                    i
                },
                |_| consumed += 1,
            )
        }));
        assert!(caught.is_err());
        assert_eq!(
            consumed, 1_488,
            "every chunk before the panic's was consumed"
        );
    }
}
