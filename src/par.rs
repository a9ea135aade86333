//! Splitting long, independent work over the machine's cores (std threads only).
//!
//! The calling thread works too. That is one thread fewer to start, and on glibc it matters
//! more: a new thread allocates from its own arena, which grows one `mprotect` call per page,
//! while the main thread's heap grows in large steps, so the calling thread is the fastest.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Maps `f` over `items` in order, on every core once there are at least `min_parallel`
/// items. `f` gets each item's index. The items are taken in small batches from a shared
/// counter, so a thread that runs faster (the calling one, see above) simply takes more. A
/// panic in any thread is re-raised.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    min_parallel: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let sequential = |items: &[T]| items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    // Asked only for long work: it reads cgroup files, seven system calls in a hook process.
    if items.len() < min_parallel.max(2) {
        return sequential(items);
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 {
        return sequential(items);
    }
    let batch = (items.len() / (threads * 16)).max(16);
    let batches = items.len().div_ceil(batch);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Vec<R>)> = Vec::new();
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= batches {
                return done;
            }
            let start = b * batch;
            let part = &items[start..(start + batch).min(items.len())];
            let out = part.iter().enumerate().map(|(i, t)| f(start + i, t));
            done.push((b, out.collect()));
        }
    };
    let mut done = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for h in others {
            done.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        done
    });
    done.sort_unstable_by_key(|(b, _)| *b);
    let mut out = Vec::with_capacity(items.len());
    for (_, part) in done {
        out.extend(part);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order_and_indices_at_every_size() {
        for n in [0, 1, 2, 3, 7, 1000, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let out = super::map(&items, 2, |i, &t| (i, t * 2));
            assert_eq!(out, items.iter().map(|&t| (t, t * 2)).collect::<Vec<_>>());
        }
    }
}
