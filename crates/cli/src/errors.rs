//! One error style for every path: `lbsim: error: ...` on one line. An error's chain of causes
//! is joined with `: `, a cause already shown at the end of the message is not repeated, the
//! argument parser's multi-line reports (clap's) are folded into one line, and control
//! characters a user typed (`--pattern $'\nx'`) are escaped rather than echoed.

use std::fmt::Write as _;

/// `e` and its causes on one line: each cause after `: `, unless the message so far already
/// ends with it (an error that shows its source), control characters escaped.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || msg.ends_with(&text) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    escape_controls(&msg)
}

/// `s` with every control character (newline, tab, escape, ...) written as Rust escapes it
/// (`\n`, `\t`, `\u{1b}`), so that echoed input cannot break a message over lines or drive
/// the terminal.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A clap error report on one line: its message and notes (`tip: ...`) joined, its usage
/// block replaced by the command whose `--help` to read.
pub fn clap_one_line(rendered: &str) -> String {
    let mut msg = String::new();
    let mut usage = None;
    for line in rendered.lines() {
        let line = line.trim();
        if let Some(u) = line.strip_prefix("Usage:") {
            usage = Some(u.trim().to_owned());
            // The rest is usage and the `--help` hint.
            break;
        }
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error:").map_or(line, str::trim_start);
        if msg.is_empty() {
        } else if msg.ends_with(':') {
            msg.push(' ');
        } else {
            msg.push_str("; ");
        }
        msg.push_str(line);
    }
    if let Some(u) = usage {
        let command: Vec<&str> = u
            .split_whitespace()
            .take_while(|w| !w.starts_with(['[', '<', '-']) && *w != "|")
            .collect();
        if !command.is_empty() {
            let _ = write!(msg, " (see `{} --help`)", command.join(" "));
        }
    }
    escape_controls(&msg)
}

#[cfg(test)]
mod tests;
