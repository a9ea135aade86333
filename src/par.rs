//! Splitting long, independent work over the machine's cores (std threads only).
//!
//! The first share runs on the calling thread. That is one thread fewer to start, and on
//! glibc it matters more: a new thread allocates from its own arena, which grows one
//! `mprotect` call per page, while the main thread's heap grows in large steps.

/// Maps `f` over `items` in order, in up to one contiguous share per core once there are at
/// least `min_parallel` items. `f` gets each item's index. A panic in any share is re-raised.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    min_parallel: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || items.len() < min_parallel.max(2) {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    let run = move |k: usize, part: &[T]| -> Vec<R> {
        part.iter()
            .enumerate()
            .map(|(i, t)| f(k * chunk + i, t))
            .collect()
    };
    std::thread::scope(|s| {
        let mut parts = items.chunks(chunk).enumerate();
        let (_, first) = parts.next().expect("at least two items");
        let others: Vec<_> = parts
            .map(|(k, part)| s.spawn(move || run(k, part)))
            .collect();
        let mut out = run(0, first);
        out.reserve(items.len() - out.len());
        for h in others {
            out.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        out
    })
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
