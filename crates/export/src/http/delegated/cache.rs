//! Answers kept for a while, by key, with a bound on how many.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Cache<V> {
    entries: Mutex<HashMap<[u8; 32], (Instant, V)>>,
    ttl: Duration,
    capacity: usize,
}

impl<V: Clone> Cache<V> {
    pub fn new(ttl: Duration, capacity: usize) -> Cache<V> {
        Cache {
            entries: Mutex::new(HashMap::new()),
            ttl,
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], (Instant, V)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer stored less than the TTL ago.
    pub fn get(&self, key: &[u8; 32]) -> Option<V> {
        let entries = self.lock();
        let (at, value) = entries.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    /// Keeps `value`; when full, expired answers go first, then the oldest.
    pub fn insert(&self, key: [u8; 32], value: V) {
        if self.ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if entries.len() >= self.capacity {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| *k);
                if let Some(oldest) = oldest {
                    entries.remove(&oldest);
                }
            }
        }
        entries.insert(key, (Instant::now(), value));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}
