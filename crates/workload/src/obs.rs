//! What the engine observed during a run: plain data the engine fills, reports read.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ids::{ProbeTag, TaskRef};
use crate::spec::TaskSpec;

/// One task's counters at the end of the run (the engine's `struct task_struct` statistics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskObservation {
    /// The task's name (from its [`TaskSpec`]).
    pub name: String,
    /// Its [`crate::Part`] index.
    pub part: u16,
    /// Its fairness group (shared with the other tasks of its group and their results).
    pub group: Arc<str>,
    /// When the engine created it; `None` for a task of the spec it did not create: a
    /// [`TaskSpec::spawned`] thread whose creator never got to spawn it, or one whose start is
    /// after the run's end. Such tasks are left out of [`RunObservations::part_tasks`].
    pub created_ns: Option<u64>,
    /// When it exited, if it did.
    pub exited_ns: Option<u64>,
    /// Time on a CPU (`se.sum_exec_runtime`).
    pub runtime_ns: u64,
    /// Work completed, in ns at capacity 1024 (runtime scaled by the capacity of the CPUs it
    /// ran on).
    pub work_ns: u64,
    /// Time runnable but not running (`sched_info.run_delay`).
    pub wait_ns: u64,
    /// The longest single stretch runnable but not running (after a wake-up or a preemption),
    /// as `perf sched latency`'s "Max delay".
    pub max_wait_ns: u64,
    /// Its waits to run (`sched_info.pcount`, one per arrival on a CPU, plus one for a wait
    /// still going on when the run ended), as `perf sched latency` counts its delays.
    pub nr_waits: u64,
    /// The wait still going on when the run ended (runnable, not yet run), ns; not in
    /// `wait_ns`, which counts completed waits as `run_delay` does.
    pub final_wait_ns: u64,
    /// Times it was switched out voluntarily (blocked or slept).
    pub nr_voluntary_switches: u64,
    /// Times it was preempted.
    pub nr_involuntary_switches: u64,
    /// Times it changed CPU (`se.nr_migrations`).
    pub nr_migrations: u64,
    /// The CPU it last ran on.
    pub last_cpu: Option<u32>,
}

impl TaskObservation {
    /// Zeroed counters for a task created at `created_ns`.
    pub fn new(spec: &TaskSpec, created_ns: u64) -> TaskObservation {
        TaskObservation {
            created_ns: Some(created_ns),
            ..TaskObservation::not_created(spec)
        }
    }

    /// The entry of a task of the spec not created yet (it keeps its [`TaskRef`]).
    pub fn not_created(spec: &TaskSpec) -> TaskObservation {
        TaskObservation::not_created_named(spec.name.clone(), spec.part, spec.group.as_str().into())
    }

    /// [`TaskObservation::not_created`] from its spec's name, moved rather than copied, and
    /// its group, shared.
    pub fn not_created_named(name: String, part: u16, group: Arc<str>) -> TaskObservation {
        TaskObservation {
            name,
            part,
            group,
            created_ns: None,
            exited_ns: None,
            runtime_ns: 0,
            work_ns: 0,
            wait_ns: 0,
            max_wait_ns: 0,
            nr_waits: 0,
            final_wait_ns: 0,
            nr_voluntary_switches: 0,
            nr_involuntary_switches: 0,
            nr_migrations: 0,
            last_cpu: None,
        }
    }

    /// Context switches away from the task (`nr_switches` in `/proc/<pid>/sched`).
    pub fn nr_switches(&self) -> u64 {
        self.nr_voluntary_switches + self.nr_involuntary_switches
    }
}

/// One [`crate::Action::Probe`] as the engine recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// The task that executed the probe.
    pub task: TaskRef,
    /// When.
    pub time_ns: u64,
    /// What it means.
    pub tag: ProbeTag,
    /// Its value.
    pub value: u64,
}

/// One wake-up as the engine measured it: from `try_to_wake_up` to the task running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeupSample {
    /// The woken task.
    pub task: TaskRef,
    /// When it was woken.
    pub wake_ns: u64,
    /// Until it ran.
    pub latency_ns: u64,
}

/// Everything a report needs from a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunObservations {
    /// When the run ended (the last event processed, or the duration limit).
    pub sim_time_ns: u64,
    /// Every task of the run, indexed by [`TaskRef`] (initial tasks, then forked ones).
    pub tasks: Vec<TaskObservation>,
    /// Every probe, in the order executed (non-decreasing time).
    pub probes: ProbeLog,
    /// Every wake-up, in the order the woken tasks ran.
    pub wakeups: WakeupLog,
}

impl RunObservations {
    /// The tasks of part `part`, with their [`TaskRef`]s.
    pub fn part_tasks(&self, part: u16) -> impl Iterator<Item = (TaskRef, &TaskObservation)> {
        self.tasks
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.part == part && t.created_ns.is_some())
            .map(|(i, t)| (TaskRef(i as u32), t))
    }

    /// The probes of part `part` with the given tag.
    pub fn part_probes(&self, part: u16, tag: ProbeTag) -> impl Iterator<Item = ProbeRecord> {
        self.part_probes_all(part).filter(move |p| p.tag == tag)
    }

    /// The probes of part `part`, every tag, in the order recorded (one pass over the log for
    /// a report that reads several tags).
    pub fn part_probes_all(&self, part: u16) -> impl Iterator<Item = ProbeRecord> {
        self.probes.iter().filter(move |p| {
            self.tasks
                .get(p.task.index())
                .is_some_and(|t| t.part == part)
        })
    }
}

/// The bytes of a [`VarintLog`]'s blocks (64 KiB: under the allocator's threshold for
/// mapping a block on its own, so blocks come from the heap, and a run with a few records
/// touches one page of it).
const LOG_BLOCK: usize = 64 << 10;

/// The most bytes a record takes: the task (at most 5), the time's change (at most 10) and
/// the other fields (a tag and a value, at most 11).
const MAX_RECORD: usize = 26;

/// Appends `v` as LEB128: seven bits a byte, low bits first, the high bit set on all bytes
/// but the last.
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Reads a [`put_varint`] value at `*pos` and moves past it.
fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// The change from `prev` to `next` as a zigzag-coded integer (small either way), exact for
/// any two `u64`s (the difference wraps, and [`undelta`] wraps it back).
fn delta(prev: u64, next: u64) -> u64 {
    let d = next.wrapping_sub(prev) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

/// The inverse of [`delta`].
fn undelta(prev: u64, z: u64) -> u64 {
    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
    prev.wrapping_add(d as u64)
}

/// A record a [`VarintLog`] stores: its time, kept as the change from the previous record's,
/// and its other fields, as variable-length integers.
pub trait LogRecord: Sized {
    /// The time the log keeps as a delta.
    fn time_ns(&self) -> u64;
    /// The task, written first.
    fn task(&self) -> TaskRef;
    /// Appends the fields after the time.
    fn put_rest(&self, bytes: &mut Vec<u8>);
    /// Reads the fields after the time, [`Self::put_rest`]'s inverse.
    fn get(task: TaskRef, time_ns: u64, bytes: &[u8], pos: &mut usize) -> Self;
}

impl LogRecord for ProbeRecord {
    fn time_ns(&self) -> u64 {
        self.time_ns
    }
    fn task(&self) -> TaskRef {
        self.task
    }
    fn put_rest(&self, bytes: &mut Vec<u8>) {
        bytes.push(self.tag as u8);
        put_varint(bytes, self.value);
    }
    fn get(task: TaskRef, time_ns: u64, bytes: &[u8], pos: &mut usize) -> ProbeRecord {
        let tag = ProbeTag::ALL[usize::from(bytes[*pos])];
        *pos += 1;
        ProbeRecord {
            task,
            time_ns,
            tag,
            value: get_varint(bytes, pos),
        }
    }
}

impl LogRecord for WakeupSample {
    fn time_ns(&self) -> u64 {
        self.wake_ns
    }
    fn task(&self) -> TaskRef {
        self.task
    }
    fn put_rest(&self, bytes: &mut Vec<u8>) {
        put_varint(bytes, self.latency_ns);
    }
    fn get(task: TaskRef, wake_ns: u64, bytes: &[u8], pos: &mut usize) -> WakeupSample {
        WakeupSample {
            task,
            wake_ns,
            latency_ns: get_varint(bytes, pos),
        }
    }
}

/// Records in the order pushed, stored compactly (a run keeps one per probe executed or per
/// wake-up, millions in a long run of a benchmark): each as the task, the time since the
/// previous record and the record's other fields, as variable-length integers: 8 to 10
/// bytes a [`ProbeRecord`] (24 in memory), 6 to 9 a [`WakeupSample`] (24). Reading gives
/// back exactly what was pushed.
///
/// The bytes are kept in blocks of 64 KiB, each allocated once and filled (a
/// record is never split between two): a buffer grown by doubling would, besides holding up
/// to twice what it uses, leave each smaller buffer it outgrew as a freed hole in the heap,
/// memory the process has touched and keeps.
///
/// Two logs are equal when they hold the same records in the same order, however their
/// bytes are split between blocks.
#[derive(Clone, Debug)]
pub struct VarintLog<R> {
    /// The filled blocks, in order.
    full: Vec<Vec<u8>>,
    /// The block being filled (no allocation until the first record).
    bytes: Vec<u8>,
    len: usize,
    last_time_ns: u64,
    _record: std::marker::PhantomData<R>,
}

/// [`RunObservations::probes`].
pub type ProbeLog = VarintLog<ProbeRecord>;
/// [`RunObservations::wakeups`].
pub type WakeupLog = VarintLog<WakeupSample>;
/// The records of a [`ProbeLog`], by value.
pub type ProbeIter<'a> = LogIter<'a, ProbeRecord>;
/// The samples of a [`WakeupLog`], by value.
pub type WakeupIter<'a> = LogIter<'a, WakeupSample>;

impl<R> Default for VarintLog<R> {
    fn default() -> Self {
        VarintLog {
            full: Vec::new(),
            bytes: Vec::new(),
            len: 0,
            last_time_ns: 0,
            _record: std::marker::PhantomData,
        }
    }
}

impl<R: LogRecord> VarintLog<R> {
    /// Appends a record.
    #[inline]
    pub fn push(&mut self, r: R) {
        if self.bytes.capacity() - self.bytes.len() < MAX_RECORD {
            self.next_block();
        }
        put_varint(&mut self.bytes, u64::from(r.task().0));
        put_varint(&mut self.bytes, delta(self.last_time_ns, r.time_ns()));
        r.put_rest(&mut self.bytes);
        self.last_time_ns = r.time_ns();
        self.len += 1;
    }

    /// Starts a new block (the first, or the next when the one being filled may not have
    /// room for a record).
    #[cold]
    #[inline(never)]
    fn next_block(&mut self) {
        let block = std::mem::replace(&mut self.bytes, Vec::with_capacity(LOG_BLOCK));
        if !block.is_empty() {
            self.full.push(block);
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Gives back the room left in the block being filled (up to 64 KiB), for a log that is
    /// complete (a run's, kept after it ends). A record pushed afterwards starts a new block.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records in the order pushed.
    pub fn iter(&self) -> LogIter<'_, R> {
        let (bytes, full) = match self.full.split_first() {
            Some((first, rest)) => (first.as_slice(), rest),
            None => (self.bytes.as_slice(), &[][..]),
        };
        LogIter {
            full,
            last: if self.full.is_empty() {
                &[]
            } else {
                &self.bytes
            },
            bytes,
            pos: 0,
            left: self.len,
            time_ns: 0,
            _record: std::marker::PhantomData,
        }
    }
}

/// The records of a [`VarintLog`], by value.
#[derive(Clone, Debug)]
pub struct LogIter<'a, R> {
    /// The filled blocks after the one being read.
    full: &'a [Vec<u8>],
    /// The log's last block, once `full` is read (empty once it is being read).
    last: &'a [u8],
    /// The block being read.
    bytes: &'a [u8],
    pos: usize,
    left: usize,
    time_ns: u64,
    _record: std::marker::PhantomData<R>,
}

impl<R: LogRecord> Iterator for LogIter<'_, R> {
    type Item = R;

    fn next(&mut self) -> Option<R> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if self.pos == self.bytes.len() {
            // The block is read: on to the next (records are never split between blocks).
            self.pos = 0;
            self.bytes = match self.full.split_first() {
                Some((next, rest)) => {
                    self.full = rest;
                    next
                }
                None => std::mem::take(&mut self.last),
            };
        }
        let task = TaskRef(get_varint(self.bytes, &mut self.pos) as u32);
        self.time_ns = undelta(self.time_ns, get_varint(self.bytes, &mut self.pos));
        Some(R::get(task, self.time_ns, self.bytes, &mut self.pos))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<R: LogRecord> ExactSizeIterator for LogIter<'_, R> {}

impl<R: LogRecord + PartialEq> PartialEq for VarintLog<R> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<R: LogRecord + Eq> Eq for VarintLog<R> {}

impl<'a, R: LogRecord> IntoIterator for &'a VarintLog<R> {
    type Item = R;
    type IntoIter = LogIter<'a, R>;

    fn into_iter(self) -> LogIter<'a, R> {
        self.iter()
    }
}

impl<R: LogRecord> FromIterator<R> for VarintLog<R> {
    fn from_iter<I: IntoIterator<Item = R>>(iter: I) -> VarintLog<R> {
        let mut log = VarintLog::default();
        log.extend(iter);
        log
    }
}

impl<R: LogRecord> Extend<R> for VarintLog<R> {
    fn extend<I: IntoIterator<Item = R>>(&mut self, iter: I) {
        for r in iter {
            self.push(r);
        }
    }
}

impl<R: LogRecord> From<Vec<R>> for VarintLog<R> {
    fn from(v: Vec<R>) -> VarintLog<R> {
        v.into_iter().collect()
    }
}

impl<R: LogRecord + Serialize> Serialize for VarintLog<R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de, R: LogRecord + Deserialize<'de>> Deserialize<'de> for VarintLog<R> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<VarintLog<R>, D::Error> {
        Vec::<R>::deserialize(d).map(VarintLog::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_give_back_what_was_pushed() {
        // Extremes of every field, times going backwards and forwards, every tag.
        let values = [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut probes = Vec::new();
        let mut wakeups = Vec::new();
        for (i, &v) in values.iter().enumerate() {
            for (j, &tag) in ProbeTag::ALL.iter().enumerate() {
                let t = values[(i + j) % values.len()];
                probes.push(ProbeRecord {
                    task: TaskRef([0, 1, 200, u32::MAX][j % 4]),
                    time_ns: t,
                    tag,
                    value: v,
                });
                wakeups.push(WakeupSample {
                    task: TaskRef([u32::MAX, 5, 0][j % 3]),
                    wake_ns: v,
                    latency_ns: t,
                });
            }
        }
        for (i, &tag) in ProbeTag::ALL.iter().enumerate() {
            assert_eq!(tag as usize, i);
        }
        let p = ProbeLog::from(probes.clone());
        assert_eq!(p.len(), probes.len());
        assert_eq!(p.iter().collect::<Vec<_>>(), probes);
        let w = WakeupLog::from(wakeups.clone());
        assert_eq!(w.len(), wakeups.len());
        assert_eq!(w.iter().collect::<Vec<_>>(), wakeups);
        // Serialized as the plain vectors were.
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            serde_json::to_string(&probes).unwrap()
        );
        let back: WakeupLog =
            serde_json::from_str(&serde_json::to_string(&wakeups).unwrap()).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn a_typical_record_takes_a_few_bytes() {
        // schbench's: a task index in the thousands, microseconds apart, a latency in us.
        let mut p = ProbeLog::default();
        let mut w = WakeupLog::default();
        for i in 0..1000u64 {
            p.push(ProbeRecord {
                task: TaskRef(10_000 + i as u32),
                time_ns: 1_000_000_000 + i * 5_000,
                tag: ProbeTag::Request,
                value: 1_500_000 + i,
            });
            w.push(WakeupSample {
                task: TaskRef(10_000 + i as u32),
                wake_ns: 1_000_000_000 + i * 5_000 - (i % 7) * 3_000,
                latency_ns: 20_000 + i,
            });
        }
        assert!(
            p.full.is_empty() && p.bytes.len() <= 9 * 1000,
            "{}",
            p.bytes.len()
        );
        assert!(
            w.full.is_empty() && w.bytes.len() <= 8 * 1000,
            "{}",
            w.bytes.len()
        );
    }

    #[test]
    fn a_log_of_many_blocks_gives_back_what_was_pushed() {
        // Records of every size, about 400 KiB: seven blocks, the last one partly filled.
        let probes: Vec<ProbeRecord> = (0..25_000u64)
            .map(|i| ProbeRecord {
                task: TaskRef((i * 7919) as u32 % 100_000),
                time_ns: i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 64),
                tag: ProbeTag::ALL[i as usize % ProbeTag::ALL.len()],
                value: u64::MAX >> (i % 64),
            })
            .collect();
        let p = ProbeLog::from(probes.clone());
        assert!(p.full.len() > 3, "{} full blocks", p.full.len());
        assert!(
            p.full.iter().all(|b| b.capacity() == LOG_BLOCK),
            "a block grew"
        );
        assert_eq!(p.len(), probes.len());
        assert_eq!(p.iter().len(), probes.len());
        assert_eq!(p.iter().collect::<Vec<_>>(), probes);
        assert_eq!(p, probes.iter().copied().collect::<ProbeLog>());
    }

    #[test]
    fn a_shrunk_log_still_equals_one_holding_the_same_records() {
        let probes: Vec<ProbeRecord> = (0..10_000u64)
            .map(|i| ProbeRecord {
                task: TaskRef(i as u32),
                time_ns: i * 1_000,
                tag: ProbeTag::Request,
                value: i,
            })
            .collect();
        let whole = ProbeLog::from(probes.clone());
        let mut shrunk = ProbeLog::from(probes[..5_000].to_vec());
        shrunk.shrink_to_fit();
        assert_eq!(shrunk.bytes.capacity(), shrunk.bytes.len());
        shrunk.extend(probes[5_000..].iter().copied());
        // The same records, split between blocks differently.
        assert_ne!(shrunk.full[0].len(), whole.full[0].len());
        assert_eq!(shrunk, whole);
        assert_eq!(shrunk.iter().collect::<Vec<_>>(), probes);
        // A record fewer, or one changed, is not equal.
        let mut fewer = ProbeLog::from(probes[..9_999].to_vec());
        assert_ne!(fewer, whole);
        fewer.push(ProbeRecord {
            value: 0,
            ..probes[9_999]
        });
        assert_ne!(fewer, whole);
    }
}
