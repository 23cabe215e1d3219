//! CPU ids and CPU masks, with the kernel's cpulist and hex-mask text forms.
//!
//! Follows include/linux/cpumask.h and lib/bitmap.c / lib/vsprintf.c (v6.6):
//! a [`Cpumask`] is a fixed-width bitmap of `nr_cpu_ids` bits. Its text forms
//! are the kernel's `%*pbl` (cpulist, `0-3,8,10-11`, as `cpulist_parse()` reads
//! it) and `%*pb` (hex words of 32 bits, most significant first, separated by
//! commas, the first word printed only as wide as the mask needs: `0f` for an
//! 8-CPU mask holding CPUs 0-3).
//!
//! Masks are stored in `u64` words (with their width beside them; the hot single-bit
//! operations read the words directly, and bitvec's [`BitSlice`] view of them does the
//! range work of the parsers); the bits above
//! `nr_cpu_ids` in the last word are always zero, so whole-word operations
//! (weight, equality, and/or/andnot) never see stale bits.
//!
//! Deliberately left out: the stride syntax of `bitmap_parselist()`
//! (`0-15:2/4`) and the `N` (last CPU) shorthand; both are rejected with a
//! parse error.

use std::fmt;

use bitvec::prelude::{BitSlice, Lsb0};
/// A CPU number (the kernel's `int cpu`), `0..nr_cpu_ids`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct CpuId(pub u32);

impl CpuId {
    /// The CPU number as an index into per-CPU vectors.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<u32> for CpuId {
    fn from(cpu: u32) -> CpuId {
        CpuId(cpu)
    }
}

/// Why a cpulist or hex mask could not be parsed. Each variant names the offending text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CpumaskParseError {
    /// A cpulist element is empty (`0,,3` or a trailing comma).
    #[error("empty element in cpulist `{list}`")]
    EmptyElement {
        /// The whole list.
        list: String,
    },
    /// A cpulist element is not a CPU number or an `a-b` range.
    #[error("`{token}` is not a CPU number or range")]
    InvalidNumber {
        /// The element that failed to parse.
        token: String,
    },
    /// A range whose end is below its start (`5-3`).
    #[error("range `{start}-{end}` ends before it starts")]
    ReversedRange {
        /// First CPU of the range.
        start: u32,
        /// Last CPU of the range.
        end: u32,
    },
    /// A CPU at or above `nr_cpu_ids`.
    #[error("CPU {cpu} is out of range (the mask has {nr_cpu_ids} CPUs)")]
    OutOfRange {
        /// The CPU number.
        cpu: u64,
        /// Width of the mask.
        nr_cpu_ids: usize,
    },
    /// A hex word holds a character that is not a hex digit.
    #[error("`{word}` is not a hex word")]
    InvalidHexWord {
        /// The offending comma-separated word.
        word: String,
    },
    /// A hex word is longer than 8 digits (32 bits).
    #[error("hex word `{word}` is longer than 8 digits")]
    HexWordTooLong {
        /// The offending comma-separated word.
        word: String,
    },
    /// The hex mask sets a bit at or above `nr_cpu_ids`.
    #[error("hex mask `{mask}` sets a CPU at or above {nr_cpu_ids}")]
    HexOverflow {
        /// The whole mask text.
        mask: String,
        /// Width of the mask.
        nr_cpu_ids: usize,
    },
}

/// A set of CPUs, `nr_cpu_ids` bits wide (the kernel's `struct cpumask`).
#[derive(Clone)]
pub struct Cpumask {
    /// The bits, least significant word first (`nr_cpu_ids.div_ceil(64)` words).
    words: Vec<u64>,
    /// `nr_cpu_ids`.
    nr_bits: usize,
}

const WORD: usize = 64;

impl Cpumask {
    /// An empty mask of `nr_cpu_ids` bits.
    pub fn new(nr_cpu_ids: usize) -> Cpumask {
        Cpumask {
            words: vec![0; nr_cpu_ids.div_ceil(WORD)],
            nr_bits: nr_cpu_ids,
        }
    }

    /// A mask with all `nr_cpu_ids` CPUs set.
    pub fn full(nr_cpu_ids: usize) -> Cpumask {
        let mut m = Cpumask::new(nr_cpu_ids);
        for w in m.words_mut() {
            *w = u64::MAX;
        }
        m.clear_tail();
        m
    }

    /// A mask of `nr_cpu_ids` bits holding `cpus`.
    ///
    /// # Panics
    /// If a CPU is at or above `nr_cpu_ids` (a caller bug, not bad input).
    pub fn from_cpus(nr_cpu_ids: usize, cpus: impl IntoIterator<Item = CpuId>) -> Cpumask {
        let mut m = Cpumask::new(nr_cpu_ids);
        for c in cpus {
            m.set(c);
        }
        m
    }

    /// The mask's width (the kernel's `nr_cpu_ids`).
    #[inline]
    pub fn nr_cpu_ids(&self) -> usize {
        self.nr_bits
    }

    /// The raw 64-bit words, least significant first; bits above `nr_cpu_ids` are zero.
    #[inline]
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    #[inline]
    fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// The mask as a bit slice, `nr_cpu_ids` bits long.
    fn bits_mut(&mut self) -> &mut BitSlice<u64, Lsb0> {
        let n = self.nr_bits;
        &mut BitSlice::from_slice_mut(&mut self.words)[..n]
    }

    fn clear_tail(&mut self) {
        let n = self.nr_cpu_ids();
        let rem = n % WORD;
        if rem != 0
            && let Some(last) = self.words_mut().last_mut()
        {
            *last &= (1u64 << rem) - 1;
        }
    }

    /// Adds `cpu` (`cpumask_set_cpu`).
    ///
    /// # Panics
    /// If `cpu` is at or above `nr_cpu_ids` (a caller bug).
    #[inline]
    pub fn set(&mut self, cpu: CpuId) {
        assert!(
            cpu.index() < self.nr_cpu_ids(),
            "cpu {cpu} out of range of a {}-cpu mask",
            self.nr_cpu_ids()
        );
        let i = cpu.index();
        self.words[i / WORD] |= 1 << (i % WORD);
    }

    /// Removes `cpu` (`cpumask_clear_cpu`); a CPU out of range is ignored.
    #[inline]
    pub fn clear(&mut self, cpu: CpuId) {
        let i = cpu.index();
        if i < self.nr_cpu_ids() {
            self.words[i / WORD] &= !(1 << (i % WORD));
        }
    }

    /// Removes every CPU (`cpumask_clear`).
    pub fn clear_all(&mut self) {
        for w in self.words_mut() {
            *w = 0;
        }
    }

    /// Whether `cpu` is in the mask (`cpumask_test_cpu`); a CPU out of range is not.
    #[inline]
    pub fn test(&self, cpu: CpuId) -> bool {
        // One word read: the balancer's scans call this for every CPU of every group.
        let i = cpu.index();
        i < self.nr_bits && (self.words[i / WORD] >> (i % WORD)) & 1 == 1
    }

    /// Number of CPUs in the mask (`cpumask_weight`).
    #[inline]
    pub fn weight(&self) -> usize {
        self.as_words()
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum()
    }

    /// Number of CPUs in both masks (`cpumask_weight_and`).
    pub fn weight_and(&self, other: &Cpumask) -> usize {
        self.check_width(other);
        self.as_words()
            .iter()
            .zip(other.as_words())
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum()
    }

    /// Whether the mask is empty (`cpumask_empty`).
    pub fn is_empty(&self) -> bool {
        self.as_words().iter().all(|w| *w == 0)
    }

    /// Whether every CPU is set (`cpumask_full`).
    pub fn is_full(&self) -> bool {
        self.weight() == self.nr_cpu_ids()
    }

    /// The first set bit at index `from` or above.
    #[inline]
    fn find_from(&self, from: usize) -> Option<usize> {
        let words = self.as_words();
        let mut wi = from / WORD;
        if wi >= words.len() {
            return None;
        }
        let mut w = words[wi] & (u64::MAX << (from % WORD));
        loop {
            if w != 0 {
                return Some(wi * WORD + w.trailing_zeros() as usize);
            }
            wi += 1;
            if wi >= words.len() {
                return None;
            }
            w = words[wi];
        }
    }

    /// The first set bit at index `from` or above that is not set in `other`.
    fn find_andnot_from(&self, other: &Cpumask, from: usize) -> Option<usize> {
        let (a, b) = (self.as_words(), other.as_words());
        let mut wi = from / WORD;
        if wi >= a.len() {
            return None;
        }
        let mut w = a[wi] & !b[wi] & (u64::MAX << (from % WORD));
        loop {
            if w != 0 {
                return Some(wi * WORD + w.trailing_zeros() as usize);
            }
            wi += 1;
            if wi >= a.len() {
                return None;
            }
            w = a[wi] & !b[wi];
        }
    }

    /// The lowest CPU in the mask (`cpumask_first`).
    pub fn first(&self) -> Option<CpuId> {
        self.find_from(0).map(|i| CpuId(i as u32))
    }

    /// The highest CPU in the mask (`cpumask_last`).
    pub fn last(&self) -> Option<CpuId> {
        let words = self.as_words();
        words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| CpuId((i * WORD + (WORD - 1 - w.leading_zeros() as usize)) as u32))
    }

    /// The lowest CPU in both masks (`cpumask_first_and`).
    pub fn first_and(&self, other: &Cpumask) -> Option<CpuId> {
        self.check_width(other);
        self.as_words()
            .iter()
            .zip(other.as_words())
            .enumerate()
            .find(|(_, (a, b))| *a & *b != 0)
            .map(|(i, (a, b))| CpuId((i * WORD + (a & b).trailing_zeros() as usize) as u32))
    }

    /// The lowest CPU above `cpu` (`cpumask_next(cpu, mask)`).
    pub fn next(&self, cpu: CpuId) -> Option<CpuId> {
        self.find_from(cpu.index() + 1).map(|i| CpuId(i as u32))
    }

    /// The lowest CPU at `cpu` or above.
    pub fn next_from(&self, cpu: CpuId) -> Option<CpuId> {
        self.find_from(cpu.index()).map(|i| CpuId(i as u32))
    }

    /// The first CPU of `self` that is not in `other`, searching from `start`
    /// upwards and then wrapping around to 0 (the search order of
    /// `for_each_cpu_wrap` that skips `other`).
    pub fn next_andnot_wrap(&self, other: &Cpumask, start: CpuId) -> Option<CpuId> {
        self.check_width(other);
        self.find_andnot_from(other, start.index())
            .or_else(|| {
                self.find_andnot_from(other, 0)
                    .filter(|i| *i < start.index())
            })
            .map(|i| CpuId(i as u32))
    }

    /// Continues a [`Cpumask::next_andnot_wrap`] walk that began at `start`:
    /// the next CPU of `self` not in `other` after `prev` in the order
    /// `start..nr_cpu_ids`, then `0..start`.
    pub fn next_andnot_wrap_after(
        &self,
        other: &Cpumask,
        prev: CpuId,
        start: CpuId,
    ) -> Option<CpuId> {
        self.check_width(other);
        let (p, s) = (prev.index(), start.index());
        let found = if p >= s {
            self.find_andnot_from(other, p + 1)
                .or_else(|| self.find_andnot_from(other, 0).filter(|i| *i < s))
        } else {
            self.find_andnot_from(other, p + 1).filter(|i| *i < s)
        };
        found.map(|i| CpuId(i as u32))
    }

    /// The CPUs in ascending order (`for_each_cpu`).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            mask: self,
            next: 0,
            end: self.nr_cpu_ids(),
        }
    }

    /// The CPUs from `start` upwards, then from 0 up to `start` (`for_each_cpu_wrap(cpu, mask, start)`:
    /// like the kernel, the walk begins *at* `start` itself when it is set).
    pub fn iter_wrap(&self, start: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        let s = start.index().min(self.nr_cpu_ids());
        Iter {
            mask: self,
            next: s,
            end: self.nr_cpu_ids(),
        }
        .chain(Iter {
            mask: self,
            next: 0,
            end: s,
        })
    }

    #[inline]
    fn check_width(&self, other: &Cpumask) {
        assert_eq!(
            self.nr_cpu_ids(),
            other.nr_cpu_ids(),
            "cpumasks of different widths"
        );
    }

    /// `self & other` (`cpumask_and`).
    pub fn and(&self, other: &Cpumask) -> Cpumask {
        let mut m = self.clone();
        m.and_assign(other);
        m
    }

    /// `self | other` (`cpumask_or`).
    pub fn or(&self, other: &Cpumask) -> Cpumask {
        let mut m = self.clone();
        m.or_assign(other);
        m
    }

    /// `self & !other` (`cpumask_andnot`).
    pub fn andnot(&self, other: &Cpumask) -> Cpumask {
        let mut m = self.clone();
        m.andnot_assign(other);
        m
    }

    /// `self = other` (`cpumask_copy`), reusing `self`'s storage when the widths match.
    pub fn copy_from(&mut self, other: &Cpumask) {
        if self.nr_bits == other.nr_bits {
            self.words.copy_from_slice(&other.words);
        } else {
            self.clone_from(other);
        }
    }

    /// `self &= other`.
    pub fn and_assign(&mut self, other: &Cpumask) {
        self.check_width(other);
        for (a, b) in self.words_mut().iter_mut().zip(other.as_words()) {
            *a &= b;
        }
    }

    /// `self |= other`.
    pub fn or_assign(&mut self, other: &Cpumask) {
        self.check_width(other);
        for (a, b) in self.words_mut().iter_mut().zip(other.as_words()) {
            *a |= b;
        }
    }

    /// `self &= !other`.
    pub fn andnot_assign(&mut self, other: &Cpumask) {
        self.check_width(other);
        for (a, b) in self.words_mut().iter_mut().zip(other.as_words()) {
            *a &= !b;
        }
    }

    /// Whether every CPU of `self` is in `of` (`cpumask_subset(self, of)`).
    #[inline]
    pub fn is_subset(&self, of: &Cpumask) -> bool {
        self.check_width(of);
        self.as_words()
            .iter()
            .zip(of.as_words())
            .all(|(a, b)| a & !b == 0)
    }

    /// Whether the masks share a CPU (`cpumask_intersects`).
    #[inline]
    pub fn intersects(&self, other: &Cpumask) -> bool {
        self.check_width(other);
        self.as_words()
            .iter()
            .zip(other.as_words())
            .any(|(a, b)| a & b != 0)
    }

    /// Parses the kernel's cpulist text (`cpulist_parse`): comma-separated CPU
    /// numbers and `a-b` ranges, e.g. `0-3,8,10-11`. The empty string is the
    /// empty mask; surrounding whitespace is ignored.
    pub fn parse_cpulist(text: &str, nr_cpu_ids: usize) -> Result<Cpumask, CpumaskParseError> {
        let mut m = Cpumask::new(nr_cpu_ids);
        let text = text.trim();
        if text.is_empty() {
            return Ok(m);
        }
        let num = |t: &str| -> Result<u64, CpumaskParseError> {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(CpumaskParseError::InvalidNumber {
                    token: t.to_owned(),
                });
            }
            t.parse::<u64>()
                .map_err(|_| CpumaskParseError::InvalidNumber {
                    token: t.to_owned(),
                })
        };
        for token in text.split(',') {
            if token.trim().is_empty() {
                return Err(CpumaskParseError::EmptyElement {
                    list: text.to_owned(),
                });
            }
            let (start, end) = match token.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (
                        num(a).map_err(|_| bad(token))?,
                        num(b).map_err(|_| bad(token))?,
                    );
                    (a, b)
                }
                None => {
                    let a = num(token)?;
                    (a, a)
                }
            };
            if end < start {
                return Err(CpumaskParseError::ReversedRange {
                    start: start as u32,
                    end: end as u32,
                });
            }
            if end >= nr_cpu_ids as u64 {
                return Err(CpumaskParseError::OutOfRange {
                    cpu: end,
                    nr_cpu_ids,
                });
            }
            m.bits_mut()[start as usize..=end as usize].fill(true);
        }
        Ok(m)
    }

    /// The kernel's cpulist text (`%*pbl`), e.g. `0-3,8,10-11`; empty for the empty mask.
    pub fn to_cpulist(&self) -> String {
        self.to_string()
    }

    /// Parses the kernel's hex mask text (`bitmap_parse`): 32-bit hex words,
    /// most significant first, separated by commas (`ff`, `1,00000000`).
    /// A word may have fewer than 8 digits; a set bit at or above `nr_cpu_ids` is an error.
    pub fn parse_hex(text: &str, nr_cpu_ids: usize) -> Result<Cpumask, CpumaskParseError> {
        let mut m = Cpumask::new(nr_cpu_ids);
        let text = text.trim();
        let words: Vec<&str> = text.split(',').collect();
        for (k, word) in words.iter().rev().enumerate() {
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(CpumaskParseError::InvalidHexWord {
                    word: (*word).to_owned(),
                });
            }
            if word.len() > 8 {
                return Err(CpumaskParseError::HexWordTooLong {
                    word: (*word).to_owned(),
                });
            }
            let v =
                u32::from_str_radix(word, 16).map_err(|_| CpumaskParseError::InvalidHexWord {
                    word: (*word).to_owned(),
                })?;
            for bit in 0..32 {
                if v & (1 << bit) != 0 {
                    let cpu = k * 32 + bit;
                    if cpu >= nr_cpu_ids {
                        return Err(CpumaskParseError::HexOverflow {
                            mask: text.to_owned(),
                            nr_cpu_ids,
                        });
                    }
                    m.set(CpuId(cpu as u32));
                }
            }
        }
        Ok(m)
    }

    /// The kernel's hex mask text (`%*pb`, lib/vsprintf.c bitmap_string()):
    /// 32-bit words, most significant first, comma-separated, lower-case,
    /// zero-padded; the first word is only as many digits wide as the bits it holds.
    pub fn to_hex(&self) -> String {
        let nr_bits = self.nr_cpu_ids();
        if nr_bits == 0 {
            return String::new();
        }
        let words = self.as_words();
        let chunk = |i: usize| -> u32 { ((words[i / WORD] >> (i % WORD)) & 0xffff_ffff) as u32 };
        let mut chunksz = nr_bits % 32;
        if chunksz == 0 {
            chunksz = 32;
        }
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(nr_bits.div_ceil(32) * 9);
        let mut i = nr_bits.div_ceil(32) * 32;
        while i >= 32 {
            i -= 32;
            let mask = if chunksz == 32 {
                u32::MAX
            } else {
                (1u32 << chunksz) - 1
            };
            let val = chunk(i) & mask;
            if !out.is_empty() {
                out.push(',');
            }
            // `{val:0width$x}`, written digit by digit (a 4096-CPU machine's schedstat
            // output formats thousands of such masks): `val` holds `chunksz` bits, so it
            // has at most `width` digits.
            let width = chunksz.div_ceil(4);
            for d in (0..width).rev() {
                out.push(char::from(DIGITS[((val >> (4 * d)) & 0xf) as usize]));
            }
            chunksz = 32;
        }
        out
    }
}

fn bad(token: &str) -> CpumaskParseError {
    CpumaskParseError::InvalidNumber {
        token: token.trim().to_owned(),
    }
}

/// Cpulist text, as the kernel's `%*pbl` prints it.
impl fmt::Display for Cpumask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while let Some(n) = it.peek().copied() {
                if n.0 == end.0 + 1 {
                    end = n;
                    it.next();
                } else {
                    break;
                }
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Cpumask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cpumask({}/{})", self, self.nr_cpu_ids())
    }
}

impl PartialEq for Cpumask {
    fn eq(&self, other: &Cpumask) -> bool {
        self.nr_cpu_ids() == other.nr_cpu_ids() && self.as_words() == other.as_words()
    }
}

impl Eq for Cpumask {}

impl std::hash::Hash for Cpumask {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.nr_cpu_ids().hash(state);
        self.as_words().hash(state);
    }
}

/// Orders masks by width, then by their words from the most significant down
/// (a total order used to intern masks; it has no kernel meaning).
impl Ord for Cpumask {
    fn cmp(&self, other: &Cpumask) -> std::cmp::Ordering {
        self.nr_cpu_ids().cmp(&other.nr_cpu_ids()).then_with(|| {
            self.as_words()
                .iter()
                .rev()
                .cmp(other.as_words().iter().rev())
        })
    }
}

impl PartialOrd for Cpumask {
    fn partial_cmp(&self, other: &Cpumask) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Ascending iterator over the CPUs of a [`Cpumask`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    mask: &'a Cpumask,
    next: usize,
    end: usize,
}

impl Iterator for Iter<'_> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        if self.next >= self.end {
            return None;
        }
        match self.mask.find_from(self.next) {
            Some(i) if i < self.end => {
                self.next = i + 1;
                Some(CpuId(i as u32))
            }
            _ => {
                self.next = self.end;
                None
            }
        }
    }
}

impl<'a> IntoIterator for &'a Cpumask {
    type Item = CpuId;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests;
