//! The ring of buckets that holds the events due in the next 4 ms or so beyond the
//! run's horizon ([`super::EventQueue`]): a push there adds the entry to its bucket's
//! unsorted list, and a bucket's entries are sorted into the run only when the queue
//! reaches it.

use super::heap::Entry;

/// log2 of a bucket's width in ns.
pub(super) const BUCKET_SHIFT: u32 = 10;

/// A bucket's width, ns (1 us). Any width gives the same order; narrower buckets keep the
/// run (then a near heap) smaller at the cost of more buckets to step through. Measured
/// (callgrind, the whole event loop, buckets as `Vec`s then) against 4 us:
/// `tbench:clients=96` on xeon-4s, where 50 events pop per simulated us, 1.9% fewer
/// instructions; `ebizzy:threads=48` on power8-22c, where one pops every 4 us, 0.8% more.
pub const BUCKET_NS: u64 = 1 << BUCKET_SHIFT;

/// Buckets in the ring (a multiple of 64): 4 ms of buckets, which holds the next tick at
/// HZ = 250 and above (the v4.x profiles run at 250). Measured (callgrind, the event loop)
/// against 1024 buckets (1 ms): the tip-avg-high run (`--kernel 4.6`, `schbench:m=4,t=44` on
/// xeon-4s, 1 s) 3.4% fewer instructions, `ebizzy:threads=48` on power8-22c (`--kernel
/// 4.11`) 0.7% fewer, `tbench:clients=96` and the 8-CPU mix at HZ = 1000 the same; the ring's
/// heads take 16 KiB.
pub const BUCKETS: usize = 4096;

const WORDS: usize = BUCKETS / 64;

/// `BUCKETS` unsorted buckets, each for one bucket number (`time >> BUCKET_SHIFT`) of a
/// window of `BUCKETS` consecutive ones; bucket number `b` is in slot `b % BUCKETS`. The
/// caller keeps the window (it only pushes bucket numbers within it, and drains a bucket
/// before the window moves past it), so a slot never mixes two bucket numbers.
///
/// A bucket is a list threaded through one pool of entries (freed entries are reused), not a
/// `Vec` of its own: each `Vec` would keep the room of the most events its bucket ever held,
/// 3.2 MB over the ring in the 1024-CPU x 20000-task cell of the `scale` bench, where the
/// pool holds the most events the whole ring held at once (24 bytes each).
pub(super) struct Ring<E> {
    /// The entries, in use or free.
    pool: Vec<Node<E>>,
    /// Per slot: the first entry of its bucket ([`NONE`]: empty).
    heads: Vec<u32>,
    /// The first free pool entry.
    free: u32,
    /// Bit `i` is set when slot `i` holds entries.
    occupied: [u64; WORDS],
    len: usize,
}

/// The end of a list.
const NONE: u32 = u32::MAX;

/// An entry of the pool: a queue entry and the next entry of its bucket's list, or of the
/// free list ([`NONE`]: the last). The link takes the room of an [`Entry`]'s padding: 24
/// bytes, as an `Entry`.
#[derive(Clone, Copy)]
struct Node<E> {
    time: crate::time::SimTime,
    seq: u64,
    slot: u32,
    next: u32,
    event: E,
}

impl<E: Copy> Node<E> {
    #[inline(always)]
    fn entry(&self) -> Entry<E> {
        Entry {
            time: self.time,
            seq: self.seq,
            slot: self.slot,
            event: self.event,
        }
    }
}

impl<E: Copy> Ring<E> {
    /// Adds `e`, whose bucket number is `b`.
    #[inline]
    pub(super) fn push(&mut self, b: u64, e: Entry<E>) {
        let i = b as usize % BUCKETS;
        let node = Node {
            time: e.time,
            seq: e.seq,
            slot: e.slot,
            next: self.heads[i],
            event: e.event,
        };
        let k = if self.free == NONE {
            self.pool.push(node);
            u32::try_from(self.pool.len() - 1).expect("fewer than 2^32 events in the ring")
        } else {
            let k = self.free;
            let n = &mut self.pool[k as usize];
            self.free = n.next;
            *n = node;
            k
        };
        self.heads[i] = k;
        self.occupied[i / 64] |= 1 << (i % 64);
        self.len += 1;
    }

    /// The first bucket number from `from` on (within the window `from..from + BUCKETS`)
    /// whose bucket holds entries.
    #[inline]
    pub(super) fn next_occupied(&self, from: u64) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let start = from as usize % BUCKETS;
        let (w0, b0) = (start / 64, start % 64);
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            return Some(from + (w0 * 64 + first.trailing_zeros() as usize - start) as u64);
        }
        for k in 1..=WORDS {
            let w = (w0 + k) % WORDS;
            let bits = if k == WORDS {
                // Back at the first word: the slots before `start`.
                self.occupied[w] & !(!0u64 << b0)
            } else {
                self.occupied[w]
            };
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                return Some(from + ((i + BUCKETS - start) % BUCKETS) as u64);
            }
        }
        unreachable!("{} entries in no slot", self.len)
    }

    /// Moves the entries of bucket number `b` to the end of `out` (in no particular order),
    /// but for those `keep` refuses.
    #[inline]
    pub(super) fn drain_into(
        &mut self,
        b: u64,
        out: &mut Vec<Entry<E>>,
        keep: &mut impl FnMut(&Entry<E>) -> bool,
    ) {
        let i = b as usize % BUCKETS;
        let mut k = std::mem::replace(&mut self.heads[i], NONE);
        while k != NONE {
            let n = &mut self.pool[k as usize];
            let e = n.entry();
            let next = std::mem::replace(&mut n.next, self.free);
            if keep(&e) {
                out.push(e);
            }
            self.free = k;
            self.len -= 1;
            k = next;
        }
        self.occupied[i / 64] &= !(1 << (i % 64));
    }

    /// Keeps the entries `keep` says to.
    pub(super) fn retain(&mut self, keep: &mut impl FnMut(&Entry<E>) -> bool) {
        for i in 0..BUCKETS {
            let mut k = std::mem::replace(&mut self.heads[i], NONE);
            while k != NONE {
                let n = &mut self.pool[k as usize];
                let next = n.next;
                if keep(&n.entry()) {
                    n.next = self.heads[i];
                    self.heads[i] = k;
                } else {
                    n.next = self.free;
                    self.free = k;
                    self.len -= 1;
                }
                k = next;
            }
            if self.heads[i] == NONE {
                self.occupied[i / 64] &= !(1 << (i % 64));
            }
        }
    }
}

impl<E> Ring<E> {
    /// Entries in the ring.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

impl<E> Default for Ring<E> {
    fn default() -> Self {
        Ring {
            pool: Vec::new(),
            heads: vec![NONE; BUCKETS],
            free: NONE,
            occupied: [0; WORDS],
            len: 0,
        }
    }
}
