//! A least-recently-used map bounded by what its values weigh in bytes, not by how many
//! there are: the process's caches (parsed templates, decoded pictures, kept sounds) hold
//! at most their configured bytes whatever the size of each entry.

use std::hash::Hash;

use lru::LruCache;

use crate::metrics;

/// Entries and the bytes they are said to weigh; the least recently used go first when a
/// new one would pass `limit`. An entry heavier than a quarter of `limit` is not kept, so
/// that one big value cannot empty the cache of everything else.
pub struct WeighedLru<K: Hash + Eq, V> {
    entries: LruCache<K, (V, usize)>,
    bytes: usize,
    limit: usize,
    /// The `cache` label of its `reelfarm_cache_bytes` metric, if it has one.
    name: Option<&'static str>,
}

impl<K: Hash + Eq, V> WeighedLru<K, V> {
    /// An empty cache of at most `limit` bytes (0 keeps nothing).
    pub fn new(limit: usize) -> WeighedLru<K, V> {
        WeighedLru { entries: LruCache::unbounded(), bytes: 0, limit, name: None }
    }

    /// The same, its bytes and limit published as `reelfarm_cache_bytes{cache=name}`.
    pub fn named(name: &'static str, limit: usize) -> WeighedLru<K, V> {
        metrics::cache_bytes(name, 0, limit);
        WeighedLru { name: Some(name), ..WeighedLru::new(limit) }
    }

    fn published(&self) {
        if let Some(name) = self.name {
            metrics::cache_bytes(name, self.bytes, self.limit);
        }
    }

    /// The value of `key`, now the most recently used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(value, _)| value)
    }

    /// Keeps `value`, weighing `bytes`, under `key` (replacing what was there) and drops
    /// the least recently used entries beyond the limit; `false` when it was too heavy
    /// to keep.
    pub fn put(&mut self, key: K, value: V, bytes: usize) -> bool {
        if bytes > self.limit / 4 {
            self.pop(&key);
            return false;
        }
        if let Some((_, old)) = self.entries.put(key, (value, bytes)) {
            self.bytes -= old;
        }
        self.bytes += bytes;
        while self.bytes > self.limit {
            let Some((_, (_, gone))) = self.entries.pop_lru() else { break };
            self.bytes -= gone;
        }
        self.published();
        true
    }

    /// Removes `key`'s entry.
    pub fn pop(&mut self, key: &K) -> Option<V> {
        let (value, bytes) = self.entries.pop(key)?;
        self.bytes -= bytes;
        self.published();
        Some(value)
    }

    /// Keeps only the entries whose key passes `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool)
    where
        K: Clone,
    {
        let gone: Vec<K> = self.entries.iter().filter(|(k, _)| !keep(k)).map(|(k, _)| k.clone()).collect();
        for key in gone {
            self.pop(&key);
        }
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.published();
    }

    /// Bytes the entries weigh together.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::WeighedLru;

    #[test]
    fn the_least_recently_used_go_when_the_bytes_pass_the_limit() {
        let mut cache = WeighedLru::new(100);
        assert!(cache.put("a", 1, 25));
        assert!(cache.put("b", 2, 25));
        assert!(cache.put("c", 3, 25));
        assert_eq!(cache.get(&"a"), Some(&1));
        assert!(cache.put("d", 4, 25));
        assert_eq!((cache.len(), cache.bytes()), (4, 100));
        // "b" was used least recently: "a" was read after it.
        assert!(cache.put("e", 5, 10));
        assert_eq!(cache.get(&"b"), None);
        assert_eq!((cache.len(), cache.bytes()), (4, 85));
        // Replacing an entry counts its new weight only.
        assert!(cache.put("e", 6, 20));
        assert_eq!(cache.bytes(), 95);
        assert_eq!(cache.get(&"e"), Some(&6));
    }

    #[test]
    fn an_entry_heavier_than_a_quarter_of_the_limit_is_not_kept_and_drops_its_old_value() {
        let mut cache = WeighedLru::new(100);
        assert!(cache.put("a", 1, 10));
        assert!(!cache.put("a", 2, 26));
        assert_eq!(cache.bytes(), 0);
        assert_eq!(cache.get(&"a"), None);
        let mut nothing = WeighedLru::new(0);
        assert!(!nothing.put("a", 1, 1));
        assert!(nothing.is_empty());
    }

    #[test]
    fn retain_drops_the_others_and_their_bytes() {
        let mut cache = WeighedLru::new(1000);
        for (i, key) in ["a1", "b1", "a2"].into_iter().enumerate() {
            cache.put(key, i, 10 * (i + 1));
        }
        cache.retain(|k| !k.starts_with('a'));
        assert_eq!((cache.len(), cache.bytes()), (1, 20));
        assert_eq!(cache.get(&"b1"), Some(&1));
        cache.clear();
        assert_eq!((cache.len(), cache.bytes()), (0, 0));
    }
}
