//! Splitting long, independent work over the machine's cores (std threads only).
//!
//! The calling thread works too. That is one thread fewer to start, and on glibc it matters
//! more: a new thread allocates from its own arena, which grows one `mprotect` call per page,
//! while the main thread's heap grows in large steps, so the calling thread is the fastest.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How `len` items are shared out: the threads to use and the items per batch, or `None` to
/// work through them on the calling thread alone.
fn plan(len: usize, min_parallel: usize) -> Option<(usize, usize)> {
    // Asked only for long work: it reads cgroup files, seven system calls in a hook process.
    if len < min_parallel.max(2) {
        return None;
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    (threads >= 2).then(|| (threads, (len / (threads * 16)).max(16)))
}

/// Maps `f` over `items` in order, on every core once there are at least `min_parallel`
/// items. `f` gets each item's index. The items are taken in small batches from a shared
/// counter, so a thread that runs faster (the calling one, see above) simply takes more. A
/// panic in any thread is re-raised.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    min_parallel: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let Some((threads, batch)) = plan(items.len(), min_parallel) else {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    };
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

/// Maps `f` over `items` on every core, handing the results to `sink` in order on the calling
/// thread as soon as each is ready, so `sink`'s sequential work overlaps the mapping instead of
/// waiting for all of it; the calling thread maps whatever is next when nothing in order is
/// ready. Stops at the first `false` from `sink` (the other threads stop soon after) and
/// returns it. A panic in any thread is re-raised.
///
/// `sink` borrows each result, which is then dropped on the thread that made it: on glibc a
/// block freed by another thread goes back to its maker's arena under that arena's lock, and
/// the two threads then wait on each other (a third of the verifier's time, when the calling
/// thread freed what the other made; docs/MEASUREMENTS.md).
pub fn map_into<T: Sync, R: Send>(
    items: &[T],
    min_parallel: usize,
    f: impl Fn(&T) -> R + Sync,
    mut sink: impl FnMut(&R) -> bool,
) -> bool {
    let Some((threads, batch)) = plan(items.len(), min_parallel) else {
        return items.iter().all(|t| sink(&f(t)));
    };
    let shared = Batches {
        items,
        batch,
        count: items.len().div_ceil(batch),
        next: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        f,
    };
    // A batch, by its index, with the thread that made it (0: the calling thread).
    let (tx, rx) = std::sync::mpsc::channel::<(usize, usize, Vec<R>)>();
    std::thread::scope(|s| {
        let mut others = Vec::with_capacity(threads - 1);
        let mut give_back = Vec::with_capacity(threads - 1);
        for maker in 1..threads {
            let tx = tx.clone();
            let (back, returned) = std::sync::mpsc::channel::<Vec<R>>();
            give_back.push(back);
            let shared = &shared;
            others.push(s.spawn(move || shared.make(maker, &tx, returned)));
        }
        drop(tx);
        // To the thread that made it; gone only if that thread panicked, which the scope
        // re-raises. The calling thread's own batches are dropped here.
        let hand_back = |maker: usize, out: Vec<R>| {
            if let Some(back) = maker.checked_sub(1).and_then(|m| give_back.get(m)) {
                let _ = back.send(out);
            }
        };
        let mut ready: Vec<Option<(usize, Vec<R>)>> = (0..shared.count).map(|_| None).collect();
        let ok = shared.sink_in_order(&rx, &mut ready, &mut sink, &hand_back);
        shared.stop.store(true, Ordering::Relaxed);
        // Batches made but not handed over (the sink stopped) go back to their makers too.
        for (maker, out) in ready.into_iter().flatten() {
            hand_back(maker, out);
        }
        drop(give_back);
        // Batches still in flight from the others are dropped here; few, at a stop.
        drop(rx);
        for h in others {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
        ok
    })
}

/// What the threads of [`map_into`] share: the items in batches, the next batch to take, and
/// whether the sink stopped.
struct Batches<'a, T, F> {
    items: &'a [T],
    batch: usize,
    count: usize,
    next: AtomicUsize,
    stop: AtomicBool,
    f: F,
}

impl<T, R, F: Fn(&T) -> R> Batches<'_, T, F> {
    /// The next batch no thread has taken, mapped, with its index; `None` when none is left.
    fn take(&self) -> Option<(usize, Vec<R>)> {
        let b = self.next.fetch_add(1, Ordering::Relaxed);
        if b >= self.count {
            return None;
        }
        let part = &self.items[b * self.batch..((b + 1) * self.batch).min(self.items.len())];
        Some((b, part.iter().map(&self.f).collect()))
    }

    /// Another thread's work: batches sent to the calling thread until none is left or the
    /// sink stopped, dropping each one as it comes back, until the calling thread is done.
    fn make(
        &self,
        maker: usize,
        tx: &std::sync::mpsc::Sender<(usize, usize, Vec<R>)>,
        returned: std::sync::mpsc::Receiver<Vec<R>>,
    ) {
        while !self.stop.load(Ordering::Relaxed) {
            returned.try_iter().for_each(drop);
            let Some((b, out)) = self.take() else { break };
            if tx.send((b, maker, out)).is_err() {
                break;
            }
        }
        // What is still to come back, until the calling thread is done with it all.
        returned.into_iter().for_each(drop);
    }

    /// The calling thread's work: each batch to `sink` in order, mapping the next batch
    /// itself while the one due is not ready. `false` once `sink` says so.
    fn sink_in_order(
        &self,
        rx: &std::sync::mpsc::Receiver<(usize, usize, Vec<R>)>,
        ready: &mut [Option<(usize, Vec<R>)>],
        sink: &mut impl FnMut(&R) -> bool,
        hand_back: &impl Fn(usize, Vec<R>),
    ) -> bool {
        let mut want = 0;
        while want < self.count {
            while let Ok((b, maker, out)) = rx.try_recv() {
                ready[b] = Some((maker, out));
            }
            if let Some((maker, out)) = ready[want].take() {
                let ok = out.iter().all(&mut *sink);
                hand_back(maker, out);
                if !ok {
                    return false;
                }
                want += 1;
                continue;
            }
            if let Some((b, out)) = self.take() {
                ready[b] = Some((0, out));
                continue;
            }
            match rx.recv() {
                Ok((b, maker, out)) => ready[b] = Some((maker, out)),
                // Every other thread is gone with a batch missing: one panicked, and the
                // scope re-raises it.
                Err(_) => break,
            }
        }
        true
    }
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

    #[test]
    fn map_into_hands_everything_over_in_order_and_stops_when_told() {
        for n in [0, 1, 2, 3, 7, 1000, 1001, 5000] {
            let items: Vec<usize> = (0..n).collect();
            let mut got = Vec::new();
            assert!(super::map_into(
                &items,
                2,
                |&t| t * 2,
                |r| {
                    got.push(*r);
                    true
                }
            ));
            assert_eq!(got, items.iter().map(|&t| t * 2).collect::<Vec<_>>());
        }
        let items: Vec<usize> = (0..5000).collect();
        let mut seen = 0;
        assert!(!super::map_into(
            &items,
            2,
            |&t| t,
            |r| {
                seen += 1;
                *r != 1234
            }
        ));
        assert_eq!(seen, 1235, "nothing after the first false");
    }

    #[test]
    #[should_panic(expected = "boom")]
    fn map_into_re_raises_a_panic() {
        let items: Vec<usize> = (0..5000).collect();
        super::map_into(&items, 2, |&t| assert!(t != 4000, "boom"), |_| true);
    }
}
