//! Byte mutations, as libFuzzer's mutator makes them: bit flips, byte changes, inserts,
//! deletions, duplicated runs, splices from another input, dictionary tokens and
//! interesting numbers, stacked one to four at a time.

use super::rng::Rng;

/// Largest input the mutator makes (libFuzzer's default `-max_len`).
pub const MAX_LEN: usize = 4096;

/// Numbers at the edges of the integer types and of parsers' fast paths.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "255",
    "256",
    "1023",
    "1024",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "-9223372036854775808",
    "1e308",
    "1e-9",
    "0.5",
    "-0",
    "NaN",
    "inf",
    "0x10",
];

/// Bytes that delimit things in our formats.
const BYTES: &[u8] = b"\0\n\r\t \"',.:;=-_[]{}#\\0123456789x";

/// Mutates `input` in place: one to four mutations, tokens from `dict`, splices from
/// `corpus`.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>], dict: &[&str]) {
    let n = 1 + rng.next_u64() % 4;
    for _ in 0..n {
        mutate_once(rng, input, corpus, dict);
    }
    input.truncate(MAX_LEN);
}

fn below(rng: &mut Rng, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

fn insert(input: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    let at = at.min(input.len());
    input.splice(at..at, bytes.iter().copied());
}

fn mutate_once(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>], dict: &[&str]) {
    let len = input.len();
    let at = below(rng, len + 1);
    match rng.next_u64() % 10 {
        0 if len > 0 => {
            let i = below(rng, len);
            input[i] ^= 1 << (rng.next_u64() % 8);
        }
        1 if len > 0 => {
            let i = below(rng, len);
            input[i] = BYTES[below(rng, BYTES.len())];
        }
        2 => {
            let b = BYTES[below(rng, BYTES.len())];
            insert(input, at, &[b]);
        }
        3 if len > 0 => {
            let n = 1 + below(rng, (len - at.min(len)).clamp(1, 16));
            let end = (at + n).min(len);
            input.drain(at.min(len)..end);
        }
        4 if !dict.is_empty() => {
            let t = dict[below(rng, dict.len())];
            insert(input, at, t.as_bytes());
        }
        5 => {
            // Replace a run of digits (or insert) with an interesting number.
            let num = NUMBERS[below(rng, NUMBERS.len())].as_bytes();
            let start = at.min(len);
            let end = start
                + input[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
            input.splice(start..end, num.iter().copied());
        }
        6 if len > 0 => {
            let from = below(rng, len);
            let n = 1 + below(rng, (len - from).min(64));
            let chunk = input[from..from + n].to_vec();
            insert(input, at, &chunk);
        }
        7 if !corpus.is_empty() => {
            let other = &corpus[below(rng, corpus.len())];
            if !other.is_empty() {
                let from = below(rng, other.len());
                let n = 1 + below(rng, (other.len() - from).min(128));
                let chunk = other[from..from + n].to_vec();
                insert(input, at, &chunk);
            }
        }
        8 if len > 0 => {
            let i = below(rng, len);
            input[i] = (rng.next_u64() & 0xff) as u8;
        }
        _ => {
            let b = (rng.next_u64() & 0xff) as u8;
            insert(input, at, &[b]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_repeatable_and_bounded() {
        let corpus = vec![b"nodes=2,cores=4".to_vec(), b"{\"tasks\":{}}".to_vec()];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            let mut input = corpus[0].clone();
            let mut seen = Vec::new();
            for _ in 0..2000 {
                mutate(&mut rng, &mut input, &corpus, &["threads="]);
                assert!(input.len() <= MAX_LEN);
                seen.push(input.clone());
            }
            seen
        };
        let a = run(7);
        assert_eq!(a, run(7), "same seed, same inputs");
        assert_ne!(a, run(8));
        // Sometimes: the dictionary and the splice were used.
        assert!(a.iter().any(|i| i.windows(8).any(|w| w == b"threads=")));
        assert!(a.iter().any(|i| i.windows(7).any(|w| w == b"\"tasks\"")));
    }
}
