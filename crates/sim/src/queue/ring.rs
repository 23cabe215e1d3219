//! The ring of buckets that holds the events due in the next millisecond or so beyond the
//! near heap's horizon ([`super::EventQueue`]): a push there is an append to an unsorted
//! bucket, and a bucket's entries enter the near heap only when the queue reaches it.

use super::heap::{Entry, Heap};

/// log2 of a bucket's width in ns.
pub(super) const BUCKET_SHIFT: u32 = 10;

/// A bucket's width, ns (1 us). Any width gives the same order; narrower buckets keep the
/// near heap smaller at the cost of more buckets to step through. Measured (callgrind, the
/// whole event loop) against 4 us: `tbench:clients=96` on xeon-4s, where 50 events pop per
/// simulated us, 1.9% fewer instructions; `ebizzy:threads=48` on power8-22c, where one
/// pops every 4 us, 0.8% more.
pub const BUCKET_NS: u64 = 1 << BUCKET_SHIFT;

/// Buckets in the ring (a multiple of 64): 1 ms of buckets, which holds the next tick at
/// HZ = 1000 (at lower HZ ticks go to the far heap).
pub const BUCKETS: usize = 1024;

const WORDS: usize = BUCKETS / 64;

/// `BUCKETS` unsorted buckets, each for one bucket number (`time >> BUCKET_SHIFT`) of a
/// window of `BUCKETS` consecutive ones; bucket number `b` is in slot `b % BUCKETS`. The
/// caller keeps the window (it only pushes bucket numbers within it, and drains a bucket
/// before the window moves past it), so a slot never mixes two bucket numbers.
pub(super) struct Ring<E> {
    slots: Vec<Vec<Entry<E>>>,
    /// Bit `i` is set when slot `i` holds entries.
    occupied: [u64; WORDS],
    len: usize,
}

impl<E: Copy> Ring<E> {
    /// Appends `e`, whose bucket number is `b`.
    #[inline]
    pub(super) fn push(&mut self, b: u64, e: Entry<E>) {
        let i = b as usize % BUCKETS;
        self.slots[i].push(e);
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

    /// Moves the entries of bucket number `b` into `heap`, but for those `keep` refuses.
    #[inline]
    pub(super) fn drain_into(
        &mut self,
        b: u64,
        heap: &mut Heap<E>,
        keep: &mut impl FnMut(&Entry<E>) -> bool,
    ) {
        let i = b as usize % BUCKETS;
        let slot = &mut self.slots[i];
        self.len -= slot.len();
        for e in slot.drain(..) {
            if keep(&e) {
                heap.push(e);
            }
        }
        self.occupied[i / 64] &= !(1 << (i % 64));
    }

    /// Keeps the entries `keep` says to.
    pub(super) fn retain(&mut self, keep: &mut impl FnMut(&Entry<E>) -> bool) {
        self.len = 0;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            slot.retain(|e| keep(e));
            self.len += slot.len();
            if slot.is_empty() {
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
            slots: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            len: 0,
        }
    }
}
