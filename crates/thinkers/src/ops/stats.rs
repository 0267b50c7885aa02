//! Order statistics shared by the reports.

/// The `p`-th percentile (0–100) of `values` by the nearest-rank method: the smallest value
/// such that at least `p` percent of the values are less than or equal to it. `values` need not
/// be sorted; an empty slice gives 0, and `p` is clamped to 0–100 (0 gives the minimum).
///
/// Nearest rank always answers a value that occurred, which suits token counts and latencies
/// (no interpolated fractions of a token).
pub fn percentile(values: &[u64], p: f64) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    percentile_sorted(&sorted, p)
}

/// [`percentile`] on values already sorted ascending.
pub(crate) fn percentile_sorted(sorted: &[u64], p: f64) -> u64 {
    let n = sorted.len();
    if n == 0 {
        return 0;
    }
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 100.0) };
    // Rank in 1..=n; the float product of a count below 2^53 is exact enough for a rank.
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let values: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&values, 50.0), 50);
        assert_eq!(percentile(&values, 95.0), 95);
        assert_eq!(percentile(&values, 99.0), 99);
        assert_eq!(percentile(&values, 100.0), 100);
        assert_eq!(percentile(&values, 0.0), 1);
        assert_eq!(percentile(&[7], 95.0), 7);
        assert_eq!(percentile(&[], 95.0), 0);
        // Twenty values: the 95th percentile is the 19th smallest.
        let twenty: Vec<u64> = (1..=20).map(|n| n * 10).collect();
        assert_eq!(percentile(&twenty, 95.0), 190);
        assert_eq!(percentile(&[3, 1, 2], f64::NAN), 1);
    }
}
