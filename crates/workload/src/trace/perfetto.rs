//! Perfetto protobuf traces: the `ftrace_events` bundles of a `Trace`, read by hand.
//!
//! Only the fields the replay needs are decoded (field numbers from
//! `protos/perfetto/trace/ftrace/*.proto`, perfetto v40+): `Trace.packet` (1);
//! `TracePacket.ftrace_events` (1), `system_info` (45, `num_cpus` 8) and `cpu_info` (67,
//! `CpuInfo { cpus 1 }`, `Cpu { capacity 3 }`: each CPU's sysfs `cpu_capacity`);
//! `FtraceEventBundle.cpu` (1), `event` (2) and `compact_sched` (4); `FtraceEvent.timestamp`
//! (1), `pid` (2) and the events `sched_switch` (4), `sched_wakeup` (17), `sched_waking` (20),
//! `sched_wakeup_new` (114), `sched_process_exit` (238), `sched_process_fork` (239), and
//! `generic` (327, `GenericFtraceEvent { event_name 1, field 2 }`, `Field { name 1,
//! str_value 3, int_value 4, uint_value 5 }`) for lbsim's own `lbsim_charge`. Every other
//! field is skipped by its wire type.
//!
//! The compact encoding (`FtraceEventBundle.CompactSched`, the default of Perfetto's traced
//! since v11) keeps switches and wakings as columns: delta-encoded timestamps, `prev_state`,
//! `next_pid`, `next_prio`, `next_comm` as an index into the bundle's intern table, and for
//! wakings `pid`, `target_cpu`, `prio`, `comm` and `common_flags`. It records neither a
//! switch's `prev` task nor a waking's `common_pid`: as Perfetto's trace processor does, the
//! `prev` of a switch is the previous switch's `next` on the same CPU (unknown for a CPU's
//! first), and a waking's waker is the task the switches say was running on the bundle's CPU
//! at that time.

use std::collections::BTreeMap;

use super::record::{Ev, LeftAs, Parsed, Record};

/// A protobuf trace that cannot be read: the byte offset of the bad field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

/// A field's value.
#[derive(Clone, Copy, Debug)]
enum Val<'a> {
    Varint(u64),
    Fixed(u64),
    Bytes(&'a [u8], usize),
}

/// A reader of one message's fields; `base` is the message's offset in the file.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

fn bad(offset: usize, message: impl Into<String>) -> ByteError {
    ByteError {
        offset: offset as u64,
        message: message.into(),
    }
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8], base: usize) -> Fields<'a> {
        Fields { buf, pos: 0, base }
    }

    fn varint(&mut self) -> Result<u64, ByteError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(bad(self.base + start, "truncated varint"));
            };
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad(self.base + start, "varint longer than 10 bytes"))
    }

    /// The next field: its number, value and offset in the file.
    fn next(&mut self) -> Result<Option<(u32, Val<'a>, usize)>, ByteError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let at = self.base + self.pos;
        let key = self.varint()?;
        let field = (key >> 3) as u32;
        if field == 0 {
            return Err(bad(at, "field number 0"));
        }
        let val = match key & 7 {
            0 => Val::Varint(self.varint()?),
            1 => Val::Fixed(self.fixed(8, at)?),
            5 => Val::Fixed(self.fixed(4, at)?),
            2 => {
                let len = self.varint()?;
                let start = self.pos;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|l| start.checked_add(l))
                    .filter(|&e| e <= self.buf.len())
                    .ok_or_else(|| {
                        bad(at, format!("length {len} runs past the end of its message"))
                    })?;
                self.pos = end;
                Val::Bytes(&self.buf[start..end], self.base + start)
            }
            w => {
                return Err(bad(
                    at,
                    format!("unsupported wire type {w} (field {field})"),
                ));
            }
        };
        Ok(Some((field, val, at)))
    }

    fn fixed(&mut self, n: usize, at: usize) -> Result<u64, ByteError> {
        let b = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or_else(|| bad(at, "truncated fixed-width field"))?;
        self.pos += n;
        Ok(b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }
}

fn int(v: Val<'_>, at: usize) -> Result<u64, ByteError> {
    match v {
        Val::Varint(x) | Val::Fixed(x) => Ok(x),
        Val::Bytes(..) => Err(bad(at, "expected a number, found a length-delimited field")),
    }
}

fn bytes(v: Val<'_>, at: usize) -> Result<(&[u8], usize), ByteError> {
    match v {
        Val::Bytes(b, o) => Ok((b, o)),
        _ => Err(bad(at, "expected a length-delimited field, found a number")),
    }
}

fn string(v: Val<'_>, at: usize) -> Result<String, ByteError> {
    Ok(String::from_utf8_lossy(bytes(v, at)?.0).into_owned())
}

/// A pid field (`int32`): negative values are refused.
fn pid(v: Val<'_>, at: usize) -> Result<u32, ByteError> {
    let x = int(v, at)? as i64;
    u32::try_from(x).map_err(|_| bad(at, format!("pid {x} out of range")))
}

/// `prev_state` in the kernel's 4.14+ report layout (`__trace_sched_switch_state()`).
fn left_as(state: i64) -> LeftAs {
    let s = state & 0xff;
    if s & 0x30 != 0 {
        LeftAs::Dead
    } else if s == 0 {
        LeftAs::Runnable
    } else {
        LeftAs::Blocked
    }
}

/// Parses a whole protobuf trace.
///
/// # Errors
/// A field that cannot be decoded, with its byte offset.
pub fn parse(buf: &[u8]) -> Result<Parsed, ByteError> {
    let mut out = Parsed::default();
    let mut last_next: BTreeMap<u32, u32> = BTreeMap::new();
    let mut top = Fields::new(buf, 0);
    while let Some((f, v, at)) = top.next()? {
        if f != 1 {
            continue;
        }
        let (pkt, base) = bytes(v, at)?;
        let mut p = Fields::new(pkt, base);
        while let Some((f, v, at)) = p.next()? {
            match f {
                1 => {
                    let (b, o) = bytes(v, at)?;
                    bundle(b, o, &mut out, &mut last_next)?;
                }
                45 => {
                    let (b, o) = bytes(v, at)?;
                    let mut s = Fields::new(b, o);
                    while let Some((f, v, at)) = s.next()? {
                        if f == 8 {
                            out.nr_cpus = Some(int(v, at)? as u32);
                        }
                    }
                }
                67 => {
                    let (b, o) = bytes(v, at)?;
                    cpu_info(b, o, &mut out)?;
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// `CpuInfo { repeated Cpu cpus = 1 }`, `Cpu { capacity = 3 }`: one entry per CPU, in CPU
/// order, its capacity as sysfs `cpu_capacity` gives it (absent on a kernel without one).
fn cpu_info(buf: &[u8], base: usize, out: &mut Parsed) -> Result<(), ByteError> {
    let mut cpus = Fields::new(buf, base);
    let mut cpu = 0u32;
    while let Some((f, v, at)) = cpus.next()? {
        if f != 1 {
            continue;
        }
        let (b, o) = bytes(v, at)?;
        let mut c = Fields::new(b, o);
        while let Some((f, v, at)) = c.next()? {
            if f == 3 {
                let cap = int(v, at)?;
                if cap == 0 || cap > 1024 {
                    return Err(bad(
                        at,
                        format!("CpuInfo: capacity {cap} is not in 1..=1024"),
                    ));
                }
                out.capacities.entry(cpu).or_insert(cap);
            }
        }
        cpu += 1;
    }
    Ok(())
}

fn bundle(
    buf: &[u8],
    base: usize,
    out: &mut Parsed,
    last_next: &mut BTreeMap<u32, u32>,
) -> Result<(), ByteError> {
    // The CPU may follow the events in the encoding: find it first.
    let mut cpu = None;
    let mut r = Fields::new(buf, base);
    while let Some((f, v, at)) = r.next()? {
        if f == 1 {
            cpu = Some(int(v, at)? as u32);
        }
    }
    let cpu = cpu.ok_or_else(|| bad(base, "ftrace_events bundle without its cpu"))?;
    let mut r = Fields::new(buf, base);
    while let Some((f, v, at)) = r.next()? {
        match f {
            2 => {
                let (b, o) = bytes(v, at)?;
                match event(b, o, cpu)? {
                    Some(rec) => {
                        if let Ev::Switch { next_pid, .. } = rec.ev {
                            last_next.insert(cpu, next_pid);
                        }
                        out.records.push(rec);
                    }
                    None => out.ignored += 1,
                }
            }
            4 => {
                let (b, o) = bytes(v, at)?;
                compact(b, o, cpu, out, last_next)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn event(buf: &[u8], base: usize, cpu: u32) -> Result<Option<Record>, ByteError> {
    let mut ts = None;
    let mut common = None;
    let mut ev = None;
    let mut generic = None;
    let mut r = Fields::new(buf, base);
    while let Some((f, v, at)) = r.next()? {
        match f {
            1 => ts = Some(int(v, at)?),
            2 => common = Some(pid(v, at)?),
            327 => generic = Some((bytes(v, at)?, at)),
            4 | 17 | 20 | 114 | 238 | 239 => {
                let (b, o) = bytes(v, at)?;
                ev = Some((f, b, o, at));
            }
            _ => {}
        }
    }
    if ev.is_none()
        && let Some(((b, o), at)) = generic
        && let Some(ev) = charge(b, o, at)?
    {
        let ts = ts.ok_or_else(|| bad(base, "ftrace event without a timestamp"))?;
        return Ok(Some(Record {
            time_ns: ts,
            cpu,
            common_pid: common,
            at: at as u64,
            ev,
        }));
    }
    let Some((kind, b, o, at)) = ev else {
        return Ok(None);
    };
    let ts = ts.ok_or_else(|| bad(base, "ftrace event without a timestamp"))?;
    let mut strs: BTreeMap<u32, String> = BTreeMap::new();
    let mut nums: BTreeMap<u32, (u64, usize)> = BTreeMap::new();
    let mut r = Fields::new(b, o);
    while let Some((f, v, fat)) = r.next()? {
        match v {
            Val::Bytes(..) => {
                strs.insert(f, string(v, fat)?);
            }
            _ => {
                nums.insert(f, (int(v, fat)?, fat));
            }
        }
    }
    let s = |f: u32| strs.get(&f).cloned().unwrap_or_default();
    let n = |f: u32| -> Result<u32, ByteError> {
        match nums.get(&f) {
            Some(&(x, a)) => pid(Val::Varint(x), a),
            None => Err(bad(at, format!("event field {f} missing"))),
        }
    };
    let prio = |f: u32| nums.get(&f).map_or(120, |&(x, _)| x as i64 as i32);
    let ev = match kind {
        4 => Ev::Switch {
            prev_comm: Some(s(1)),
            prev_pid: Some(n(2)?),
            prev_prio: Some(prio(3)),
            prev_state: left_as(nums.get(&4).map_or(0, |&(x, _)| x as i64)),
            next_comm: s(5),
            next_pid: n(6)?,
            next_prio: prio(7),
        },
        17 | 20 => Ev::Wake {
            comm: s(1),
            pid: n(2)?,
            prio: prio(3),
            waking: kind == 20,
        },
        114 => Ev::WakeupNew {
            comm: s(1),
            pid: n(2)?,
            prio: prio(3),
        },
        238 => Ev::Exit { pid: n(2)? },
        _ => Ev::Fork {
            parent_pid: n(2)?,
            child_comm: s(3),
            child_pid: n(4)?,
        },
    };
    Ok(Some(Record {
        time_ns: ts,
        cpu,
        common_pid: common,
        at: at as u64,
        ev,
    }))
}

/// lbsim's `lbsim_charge` from a `GenericFtraceEvent` (`None` for any other generic event).
fn charge(buf: &[u8], base: usize, at: usize) -> Result<Option<Ev>, ByteError> {
    let mut name = None;
    let mut cost = None;
    let mut what = None;
    let mut sync = false;
    let mut irq = false;
    let mut r = Fields::new(buf, base);
    while let Some((f, v, fat)) = r.next()? {
        match f {
            1 => name = Some(string(v, fat)?),
            2 => {
                let (b, o) = bytes(v, fat)?;
                let (mut key, mut num, mut text) = (None, None, None);
                let mut fr = Fields::new(b, o);
                while let Some((f, v, vat)) = fr.next()? {
                    match f {
                        1 => key = Some(string(v, vat)?),
                        3 => text = Some(string(v, vat)?),
                        4 | 5 => num = Some(int(v, vat)?),
                        _ => {}
                    }
                }
                match key.as_deref() {
                    Some("cost") => cost = num,
                    Some("what") => what = text,
                    Some("sync") => sync = num.is_some_and(|n| n != 0),
                    Some("irq") => irq = num.is_some_and(|n| n != 0),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if name.as_deref() != Some("lbsim_charge") {
        return Ok(None);
    }
    let cost_ns = cost.ok_or_else(|| bad(at, "lbsim_charge without a numeric cost field"))?;
    Ok(Some(Ev::Charge {
        cost_ns,
        newidle: what.as_deref() == Some("newidle"),
        sync,
        irq,
    }))
}

/// The values of a packed (or one unpacked) repeated varint field.
fn packed(v: Val<'_>, at: usize, out: &mut Vec<u64>) -> Result<(), ByteError> {
    match v {
        Val::Bytes(b, o) => {
            let mut r = Fields::new(b, o);
            while r.pos < b.len() {
                out.push(r.varint()?);
            }
            Ok(())
        }
        v => {
            out.push(int(v, at)?);
            Ok(())
        }
    }
}

fn compact(
    buf: &[u8],
    base: usize,
    cpu: u32,
    out: &mut Parsed,
    last_next: &mut BTreeMap<u32, u32>,
) -> Result<(), ByteError> {
    let mut cols: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut intern: Vec<String> = Vec::new();
    let mut r = Fields::new(buf, base);
    while let Some((f, v, at)) = r.next()? {
        match f {
            5 => intern.push(string(v, at)?),
            1..=4 | 6..=12 => packed(v, at, cols.entry(f).or_default())?,
            _ => {}
        }
    }
    let col = |f: u32| cols.get(&f).map_or(&[][..], Vec::as_slice);
    let comm = |i: u64| -> Result<String, ByteError> {
        intern.get(i as usize).cloned().ok_or_else(|| {
            bad(
                base,
                format!(
                    "compact_sched comm index {i} past the intern table ({} strings)",
                    intern.len()
                ),
            )
        })
    };
    let n_sw = col(1).len();
    for f in [2, 3, 4, 6] {
        if col(f).len() != n_sw {
            return Err(bad(
                base,
                format!(
                    "compact_sched switch column {f} has {} entries, timestamps {n_sw}",
                    col(f).len()
                ),
            ));
        }
    }
    let n_wk = col(7).len();
    for f in [8, 10, 11] {
        if col(f).len() != n_wk {
            return Err(bad(
                base,
                format!(
                    "compact_sched waking column {f} has {} entries, timestamps {n_wk}",
                    col(f).len()
                ),
            ));
        }
    }
    let to_pid = |x: u64| {
        u32::try_from(x as i64).map_err(|_| bad(base, format!("pid {} out of range", x as i64)))
    };
    let mut switches = Vec::with_capacity(n_sw);
    let mut t = 0u64;
    for i in 0..n_sw {
        t = t.wrapping_add(col(1)[i]);
        switches.push((t, i));
    }
    let mut wakings = Vec::with_capacity(n_wk);
    let mut t = 0u64;
    for i in 0..n_wk {
        t = t.wrapping_add(col(7)[i]);
        wakings.push((t, i));
    }
    // Merge the two columns by time (switches first on ties, as Perfetto orders them), to
    // know who runs on the CPU at each waking.
    let (mut a, mut b) = (0, 0);
    while a < switches.len() || b < wakings.len() {
        let take_switch = b >= wakings.len() || a < switches.len() && switches[a].0 <= wakings[b].0;
        if take_switch {
            let (ts, i) = switches[a];
            a += 1;
            let next_pid = to_pid(col(3)[i])?;
            let prev = last_next.insert(cpu, next_pid);
            out.records.push(Record {
                time_ns: ts,
                cpu,
                common_pid: prev,
                at: base as u64,
                ev: Ev::Switch {
                    prev_pid: prev,
                    prev_comm: None,
                    prev_prio: None,
                    prev_state: left_as(col(2)[i] as i64),
                    next_pid,
                    next_comm: comm(col(6)[i])?,
                    next_prio: col(4)[i] as i64 as i32,
                },
            });
        } else {
            let (ts, i) = wakings[b];
            b += 1;
            // common_flags bit 3 (TRACE_FLAG_HARDIRQ) and 4 (SOFTIRQ): interrupt context.
            let irq = col(12).get(i).is_some_and(|f| f & 0x18 != 0);
            out.records.push(Record {
                time_ns: ts,
                cpu,
                common_pid: if irq {
                    None
                } else {
                    last_next.get(&cpu).copied()
                },
                at: base as u64,
                ev: Ev::Wake {
                    pid: to_pid(col(8)[i])?,
                    comm: comm(col(11)[i])?,
                    prio: col(10)[i] as i64 as i32,
                    waking: true,
                },
            });
        }
    }
    Ok(())
}
