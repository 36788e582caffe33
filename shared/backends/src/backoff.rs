//! Waits between tries: the first wait doubled for each try after the first, up to a cap;
//! with jitter where many processes retry the same thing at once (a broker back after a
//! restart should not see every consumer at the same instant).

use std::time::Duration;

use rand::Rng;

/// `first`, doubled for each try after the first (`attempt` counts from 1), at most `cap`.
pub fn exponential(first: Duration, attempt: u32, cap: Duration) -> Duration {
    let doublings = attempt.saturating_sub(1).min(16);
    first.saturating_mul(1 << doublings).min(cap)
}

/// `wait` ± 10 %.
pub fn jittered(wait: Duration) -> Duration {
    wait.mul_f64(rand::thread_rng().gen_range(0.9..=1.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_per_attempt_up_to_the_cap() {
        let (first, cap) = (Duration::from_secs(2), Duration::from_secs(300));
        let waits: Vec<u64> = (1..=5).map(|a| exponential(first, a, cap).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32]);
        assert_eq!(exponential(first, 0, cap), first, "attempt 0 reads as the first");
        assert_eq!(exponential(first, 40, cap), cap);
        assert_eq!(exponential(Duration::ZERO, 3, cap), Duration::ZERO);
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        for _ in 0..1000 {
            let wait = jittered(Duration::from_millis(1000)).as_millis();
            assert!((900..=1100).contains(&wait), "{wait}");
        }
    }
}
