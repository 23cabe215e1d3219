//! Did-you-mean: the valid names nearest to a misspelt one.

/// The Levenshtein distance between `a` and `b`, ASCII case ignored.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<u8> = a.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<u8> = b.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The 1 to 3 names of `candidates` nearest to `name`: the nearest, and those at most one
/// edit farther, in `candidates` order among equals.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, usize, &str)> = candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| (edit_distance(name, c), i, c))
        .collect();
    scored.sort_unstable();
    let Some(&(best, _, _)) = scored.first() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .take_while(|&(d, _, _)| d <= best + 1)
        .take(3)
        .map(|(_, _, c)| c)
        .collect()
}
