//! ebizzy: threads that repeatedly allocate a buffer, copy a chunk into it, search it and
//! free it.
//!
//! Follows ebizzy.c (0.3): `threads` threads loop until `seconds` pass; each record allocates
//! a copy of a 512 KiB chunk, copies the chunk, binary-searches a random key and frees the
//! copy. glibc serves the first allocation with `mmap` (above its initial 128 KiB
//! threshold); freeing it raises the dynamic mmap threshold, so later records reuse heap
//! memory. The first record's `mmap` and `munmap` take the process's `mmap_lock` for writing,
//! modelled as a mutex around each of them (page faults are folded into the copy's cost);
//! later records are CPU work only. Costs at capacity 1024 (keys `mmap`,
//! `search`, `munmap`; defaults 1 us, 90 us, 5 us: a 512 KiB copy with its 128 page faults
//! and a TLB-shootdown `munmap` on a modern server core) give about 10000 records/s per
//! thread.
//!
//! The report is ebizzy's (`%u records/s`, `real`, `user`, `sys`), over the time simulated
//! (the `-S` seconds asked for, or less when the run stopped sooner: `real` says which), then
//! lbsim's per-thread rates on a `#` line of their own so that the first line stays the one
//! scripts anchor on; `user` and `sys` split the threads' CPU time between the copy and
//! search (user) and the mmap, munmap and fault work (sys) in proportion to the modelled
//! costs; then the block `perf stat -e context-switches,cpu-migrations` prints (seed 004's
//! measurement).

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, Unit, WorkloadError};
use crate::ids::ProbeTag;
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::perf_stat::perf_stat_block;
use crate::report::{Fairness, Metric};

const SEC: u64 = 1_000_000_000;

/// `ebizzy:threads=N[,runtime=D][,mmap=D][,search=D][,munmap=D]`.
#[derive(Clone, Copy, Debug)]
pub struct Ebizzy;

/// The parsed keys of [`Ebizzy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Threads (`-t`, required: ebizzy's default is twice the online CPUs).
    pub threads: u32,
    /// Run length in whole seconds (`-S`, default 10).
    pub runtime_s: u64,
    /// `mmap` of the copy buffer, under the mmap lock.
    pub mmap_ns: u64,
    /// Copy and search of one record (user time plus page faults).
    pub search_ns: u64,
    /// `munmap` of the copy buffer, under the mmap lock.
    pub munmap_ns: u64,
}

impl Generator for Ebizzy {
    type Params = Params;
    const NAME: &'static str = "ebizzy";
    const ABOUT: &'static str = "threads allocating, copying, searching and freeing a buffer";
    const KEYS: &'static [Key] = &[
        Key::required(
            "threads",
            "threads (-t; ebizzy's default is twice the online CPUs)",
        ),
        Key::value(
            "runtime",
            "10s",
            "run length in whole seconds (-S; a bare number is s)",
        ),
        Key::value(
            "mmap",
            "1us",
            "mmap of the copy buffer, under the mmap lock (a bare number is us)",
        ),
        Key::value(
            "search",
            "90us",
            "copy and search of one record (a bare number is us)",
        ),
        Key::value(
            "munmap",
            "5us",
            "munmap of the copy buffer, under the mmap lock (a bare number is us)",
        ),
    ];
    const EXAMPLE: &'static str = "ebizzy:threads=8";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let threads = a.u32_in("threads", 1, 1_000_000)?;
        let runtime = a.duration("runtime", Unit::S, SEC)?;
        if runtime % SEC != 0 {
            return Err(WorkloadError::BadValue {
                workload: "ebizzy".into(),
                key: "runtime".into(),
                value: format!("{runtime}ns"),
                expected: "whole seconds (ebizzy's -S)".into(),
            });
        }
        let p = Params {
            threads,
            runtime_s: runtime / SEC,
            mmap_ns: a.duration("mmap", Unit::Us, 0)?,
            search_ns: a.duration("search", Unit::Us, 1)?,
            munmap_ns: a.duration("munmap", Unit::Us, 0)?,
        };
        a.finish()?;
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        Size::tasks(u64::from(p.threads))
    }

    fn build(p: &Params, b: &mut Builder) {
        let mm = b.spec.sync.add_mutex("mmap_lock");
        let end = p.runtime_s * SEC;
        // glibc's dynamic mmap threshold (malloc.c, since 2.6): freeing an mmapped chunk
        // raises M_MMAP_THRESHOLD above its size, so only each thread's first record maps
        // and unmaps its copy under the mmap lock; every later record reuses heap memory
        // and is pure CPU work. This is why ebizzy threads almost never block (seed 004's
        // `perf stat` counts about one context switch per thread per second).
        let program = Arc::new(Program::prologue_then_forever(
            vec![
                Event::ExitAfter { abs_ns: end },
                Event::Lock(mm),
                Event::Run { work_ns: p.mmap_ns },
                Event::Unlock(mm),
                Event::Run {
                    work_ns: p.search_ns,
                },
                Event::Lock(mm),
                Event::Run {
                    work_ns: p.munmap_ns,
                },
                Event::Unlock(mm),
                Event::Tally { interval_ns: 0 },
            ],
            vec![
                Event::ExitAfter { abs_ns: end },
                Event::Run {
                    work_ns: p.search_ns,
                },
                Event::Tally { interval_ns: 0 },
            ],
        ));
        for i in 0..p.threads {
            b.task(format!("ebizzy-{i}"), "ebizzy", &program);
        }
        b.spec.duration_ns = Some(end + SEC);
        b.asks_ns = Some(end);
    }

    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let tasks: Vec<_> = obs.part_tasks(part).collect();
        // Each thread's records, in one pass over the probe log.
        let mut of_task: Vec<Option<usize>> = vec![None; obs.tasks.len()];
        for (k, (r, _)) in tasks.iter().enumerate() {
            if let Some(o) = of_task.get_mut(r.index()) {
                *o = Some(k);
            }
        }
        let mut records = vec![0u64; tasks.len()];
        for pr in &obs.probes {
            if pr.tag == ProbeTag::TallyCount
                && let Some(k) = of_task.get(pr.task.index()).copied().flatten()
            {
                records[k] += pr.value;
            }
        }
        let elapsed_ns = obs.sim_time_ns.min(p.runtime_s * SEC);
        let rate = |r: u64| {
            if elapsed_ns == 0 {
                0
            } else {
                (u128::from(r) * u128::from(SEC) / u128::from(elapsed_ns)) as u64
            }
        };
        let per_thread: Vec<u64> = records.iter().map(|&r| rate(r)).collect();
        let total: u64 = per_thread.iter().sum();
        let cpu_s = tasks.iter().map(|(_, t)| t.runtime_ns).sum::<u64>() as f64 / 1e9;
        let per_record = (p.mmap_ns + p.search_ns + p.munmap_ns).max(1) as f64;
        let user = cpu_s * p.search_ns as f64 / per_record;
        let sys = cpu_s - user;
        let mut s = String::new();
        let _ = writeln!(s, "{total} records/s");
        let _ = writeln!(s, "real {:5.2} s", elapsed_ns as f64 / 1e9);
        let _ = writeln!(s, "user {user:5.2} s");
        let _ = writeln!(s, "sys  {sys:5.2} s");
        s.push_str("# lbsim: records/s per thread:");
        for r in &per_thread {
            let _ = write!(s, " {r}");
        }
        s.push('\n');
        // Seed 004 ran ebizzy under `perf stat -e context-switches,cpu-migrations`: the
        // process's counters (its threads'), over the time simulated.
        let switches: u64 = tasks.iter().map(|(_, t)| t.nr_switches()).sum();
        let migrations: u64 = tasks.iter().map(|(_, t)| t.nr_migrations).sum();
        s.push_str(&perf_stat_block(
            &format!("ebizzy -t {} -S {}", p.threads, p.runtime_s),
            switches,
            migrations,
            elapsed_ns,
        ));
        let f = Fairness::of(&records);
        let metrics = vec![
            Metric::new("records_per_second", "records/s", total as f64, true),
            Metric::new(
                "thread_records_min_max_ratio",
                "ratio",
                f.min_max_ratio,
                true,
            ),
        ];
        (s, metrics)
    }
}
