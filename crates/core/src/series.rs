//! Per-CPU time series sampled at a fixed simulated period, for a front end's plots
//! (`lbsim run --plot`): each CPU's `rq->nr_running` and its root cfs_rq's `util_avg` as they
//! stand at every multiple of the period, from 0 to the end of the run.
//!
//! Not a kernel function: the kernel has no such sampler (LISA samples `sched_pelt_cfs` from
//! a trace). A sample reads the state after every event at or before its time (it is taken
//! before the first event past it, or at the run's end) and changes nothing: `util_avg` is the value the cfs_rq holds (as of its last PELT update, which is
//! what `cpu_util_cfs()` reads), not a freshly decayed one. A run not asked for series
//! ([`Core::with_cpu_series`](crate::Core::with_cpu_series)) keeps none and does no work
//! for them.

/// The sampled series of a run: sample `i` is at `times_ns[i]` = `i * period_ns`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuSeries {
    /// The sampling period, ns of simulated time.
    pub period_ns: u64,
    /// The sample times, ns.
    pub times_ns: Vec<u64>,
    /// `rq->nr_running` per CPU (outer index) per sample (inner index).
    pub nr_running: Vec<Vec<u32>>,
    /// The root cfs_rq's `util_avg` per CPU per sample (capacity units, 1024 = a full
    /// CPU of the largest capacity).
    pub util_avg: Vec<Vec<u64>>,
}

/// A sampler in progress: the series so far and the next sample's time.
#[derive(Clone, Debug)]
pub(crate) struct Sampler {
    pub(crate) next_ns: u64,
    pub(crate) series: CpuSeries,
}

impl Sampler {
    /// A sampler every `period_ns` (at least 1) over `nr_cpus` CPUs, the first sample at 0.
    pub(crate) fn new(period_ns: u64, nr_cpus: usize) -> Sampler {
        Sampler {
            next_ns: 0,
            series: CpuSeries {
                period_ns: period_ns.max(1),
                times_ns: Vec::new(),
                nr_running: vec![Vec::new(); nr_cpus],
                util_avg: vec![Vec::new(); nr_cpus],
            },
        }
    }
}

impl<B: lbsim_balance::ctx::Balancer> crate::Core<B> {
    /// Takes every sample due before `t_ns` (`inclusive`: at `t_ns` too), from the state as
    /// it stands.
    pub(crate) fn sample_until(&mut self, t_ns: u64, inclusive: bool) {
        let Some(s) = self.series.as_mut() else {
            return;
        };
        while s.next_ns < t_ns || (inclusive && s.next_ns == t_ns) {
            s.series.times_ns.push(s.next_ns);
            for (c, rq) in self.rqs.iter().enumerate() {
                s.series.nr_running[c].push(rq.nr_running);
                s.series.util_avg[c].push(rq.cfs.avg.avg.util_avg);
            }
            s.next_ns += s.series.period_ns;
        }
    }
}
