//! Password hashing behind a bounded queue: Argon2 takes 19 MiB and a core for a good part
//! of a second, so a flood of sign-ins (each with another address, every limit per
//! address or e-mail passed) must not ask for memory and cores without bound. At most one
//! hash per core runs at once and a few more wait; beyond that a request is refused at
//! once (`TryLater` a second: a 429 with `Retry-After: 1`) without hashing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::AppError;

/// Hashes that may wait for a core, per core.
const WAITING_PER_CORE: usize = 4;

/// The bounded pool every password hash and check of a process goes through.
#[derive(Debug, Clone)]
pub struct Hashing {
    running: Arc<Semaphore>,
    /// Hashes running or waiting.
    admitted: Arc<AtomicUsize>,
    most: usize,
}

impl Hashing {
    /// A pool of `cores` hashes at once and `cores` × 4 waiting.
    pub fn new(cores: usize) -> Hashing {
        let cores = cores.max(1);
        Hashing {
            running: Arc::new(Semaphore::new(cores)),
            admitted: Arc::new(AtomicUsize::new(0)),
            most: cores * (1 + WAITING_PER_CORE),
        }
    }

    /// Runs `work` (a hash or a check) on a blocking thread once a core is free; refused
    /// at once when the queue is full.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, AppError> {
        let admitted = self.admitted.fetch_add(1, Ordering::AcqRel);
        let _admission = Admission(&self.admitted);
        if admitted >= self.most {
            tracing::warn!(admitted, "password hashing queue full: request refused");
            return Err(AppError::TryLater { seconds: 1 });
        }
        let _permit = self.running.acquire().await.map_err(|e| AppError::Failed(format!("hashing: {e}")))?;
        tokio::task::spawn_blocking(work).await.map_err(|e| AppError::Failed(format!("hashing stopped: {e}")))
    }
}

/// Counts a request out of the queue when it ends, however it ends.
struct Admission<'a>(&'a AtomicUsize);

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn beyond_the_queue_a_hash_is_refused_at_once() {
        let hashing = Hashing::new(1);
        let (release, wait) = mpsc::channel::<()>();
        let wait = Arc::new(std::sync::Mutex::new(wait));
        // One running and four waiting fill a one-core pool.
        let mut held = Vec::new();
        for _ in 0..5 {
            let (hashing, wait) = (hashing.clone(), wait.clone());
            held.push(tokio::spawn(async move {
                hashing.run(move || wait.lock().unwrap().recv_timeout(Duration::from_secs(10)).is_ok()).await
            }));
        }
        while hashing.admitted.load(Ordering::Acquire) < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let refused = hashing.run(|| ()).await.unwrap_err();
        assert!(matches!(refused, AppError::TryLater { seconds: 1 }), "{refused:?}");
        for _ in 0..5 {
            release.send(()).unwrap();
        }
        for h in held {
            assert!(h.await.unwrap().unwrap());
        }
        assert_eq!(hashing.admitted.load(Ordering::Acquire), 0, "every admission counted out");
        hashing.run(|| ()).await.expect("room again");
    }
}
