//! The order in which runqueues changed, for a reader that keeps what it computed from them
//! across calls: load_balance()'s group statistics between two attempts of one pass
//! (`lb/memo.rs`), and the fork path's keys of a domain's groups between placements
//! (`fork/idlest_index.rs`).
//!
//! Every CPU marked since the last read (borrowed mutably, see [`super::Rqs`]) is appended to
//! a ring of the last [`CHANGE_LOG_LEN`] entries when the log is next read, so a position in
//! the log ([`ChangePos`]) separates the changes made before it from those made after: a
//! CPU whose runqueue has not been logged since a reader's position holds what it held then,
//! but for the fields [`super::Rqs`] writes without marking (the clocks, `next_balance`,
//! `max_idle_balance_cost`), which no reader of the log may depend on.
//! Several readers may hold positions at once (two newly idle balances in progress); one
//! whose position has fallen out of the ring is told so and recomputes everything. lbsim's
//! own bookkeeping, not a kernel structure.

/// How many logged changes the ring keeps.
pub(super) const CHANGE_LOG_LEN: usize = 256;

/// A position in the log of runqueue changes ([`super::Rqs::change_pos`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangePos(u64);

/// The log's state: the ring of the last changes, and the CPUs marked since it was last read.
#[derive(Clone, Debug, Default)]
pub(super) struct ChangeLog {
    /// Entry `p % CHANGE_LOG_LEN` for each of the last positions `p` before `end`: the CPU
    /// logged there. Empty until the first read.
    ring: Vec<u32>,
    /// Entries ever logged.
    end: u64,
    /// CPUs borrowed mutably since the log was last read, each once.
    pub(super) marked: Vec<u32>,
}

impl ChangeLog {
    /// Logs the CPUs marked since the last call, clearing their `flag` in `flags`, and returns
    /// the end of the log.
    pub(super) fn flush(&mut self, flags: &mut [u8], flag: u8) -> ChangePos {
        if self.ring.is_empty() {
            self.ring = vec![0; CHANGE_LOG_LEN];
        }
        for &c in &self.marked {
            flags[c as usize] &= !flag;
            self.ring[(self.end % CHANGE_LOG_LEN as u64) as usize] = c;
            self.end += 1;
        }
        self.marked.clear();
        ChangePos(self.end)
    }

    /// Calls `f` with every CPU logged from `from` to `to` (in order, with repeats); false,
    /// without calling it, if the ring no longer holds them all (or the positions are not
    /// this log's, `from` after `to` or `to` after its end).
    pub(super) fn between(&self, from: ChangePos, to: ChangePos, mut f: impl FnMut(u32)) -> bool {
        if from.0 > to.0 || to.0 > self.end || self.end - from.0 > CHANGE_LOG_LEN as u64 {
            return false;
        }
        for p in from.0..to.0 {
            f(self.ring[(p % CHANGE_LOG_LEN as u64) as usize]);
        }
        true
    }
}

#[cfg(test)]
mod tests;
