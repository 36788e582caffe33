//! Latency percentiles, shared by `reelfarm loadtest` and the benches.

use serde::Serialize;

/// Percentiles (nearest rank) of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: usize,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Percentiles {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_by(f64::total_cmp);
        let at = |p: f64| v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1];
        Percentiles {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: at(0.50),
            p95: at(0.95),
            p99: at(0.99),
            max: v[v.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let p = Percentiles::of((1..=100).map(f64::from));
        assert_eq!((p.count, p.p50, p.p95, p.p99, p.max, p.mean), (100, 50.0, 95.0, 99.0, 100.0, 50.5));
        assert_eq!(Percentiles::of([]), Percentiles::default());
        assert_eq!(Percentiles::of([7.0]).p99, 7.0);
    }
}
