//! The block `perf stat -e context-switches,cpu-migrations` prints after a command, for the
//! workloads that the seed experiments measured that way (seed 004's ebizzy).

use std::fmt::Write as _;

/// `n` with a comma every three digits, as perf prints counts (`print_big_num`, the default).
pub fn big_num(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The text of `perf stat -e context-switches,cpu-migrations -- COMMAND`: the header naming the
/// command, one line per software counter (the value right-aligned in 18 columns, then the
/// event name), and the elapsed time. Follows tools/perf/util/stat-display.c (v6.x) for the
/// counters of a task and its children (`perf stat` without `-a`).
pub fn perf_stat_block(
    command: &str,
    context_switches: u64,
    cpu_migrations: u64,
    elapsed_ns: u64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n Performance counter stats for '{command}':\n");
    for (v, name) in [
        (context_switches, "context-switches"),
        (cpu_migrations, "cpu-migrations"),
    ] {
        let _ = writeln!(s, "{:>18}      {name}", big_num(v));
    }
    let _ = writeln!(
        s,
        "\n{:>17.9} seconds time elapsed\n",
        elapsed_ns as f64 / 1e9
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_and_aligned() {
        assert_eq!(big_num(0), "0");
        assert_eq!(big_num(999), "999");
        assert_eq!(big_num(1_440), "1,440");
        assert_eq!(big_num(1_234_567), "1,234,567");
        assert_eq!(
            perf_stat_block("ebizzy -t 22 -S 100", 1_440, 366, 100_003_521_583),
            "\n Performance counter stats for 'ebizzy -t 22 -S 100':\n\n\
             \x20            1,440      context-switches\n\
             \x20              366      cpu-migrations\n\n\
             \x20   100.003521583 seconds time elapsed\n\n"
        );
    }
}
