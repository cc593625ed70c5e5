//! Per-item work spread over the machine's cores, results in input order.
//!
//! A commit validates and serializes every object on its own, and on a 2-core machine a
//! commit of 100,000 objects ran at one core's speed; the order of results is kept, so the
//! first error reported is the one a sequential pass would have met first.

use std::num::NonZeroUsize;

/// Below this many items a second thread costs more than it saves.
const MIN_ITEMS_PER_THREAD: usize = 256;

/// `items.iter().map(f).collect()`, with `items` cut into one contiguous run per core.
pub fn map_ordered<'a, T: Sync, R: Send>(items: &'a [T], f: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(NonZeroUsize::get)
        .unwrap_or(1)
        .min(items.len() / MIN_ITEMS_PER_THREAD)
        .max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let run = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(run)
            .map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
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
    fn a_panic_in_one_item_reaches_the_caller() {
        let items: Vec<usize> = (0..2_000).collect();
        let caught = std::panic::catch_unwind(|| {
            map_ordered(&items, |&i| {
                assert!(i != 1_500, "item 1500");
                i
            })
        });
        assert!(caught.is_err());
    }
}
