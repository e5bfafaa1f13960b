//! Bounded memory of finished entities: the most recent `cap` keys (with a value each) are
//! remembered, older ones forgotten, so memory stays bounded however long the trace.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// The last `cap` entries inserted.
#[derive(Debug, Clone)]
pub(crate) struct Recent<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

/// Recently finished keys.
pub(crate) type History<K> = Recent<K, ()>;

impl<K: Hash + Eq + Clone, V> Recent<K, V> {
    pub(crate) fn new(cap: usize) -> Self {
        Recent {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap,
        }
    }

    /// Remembers `key` with `value`, forgetting the oldest entry when full.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        if self.cap == 0 {
            return;
        }
        if let Some(v) = self.map.get_mut(&key) {
            *v = value;
            return;
        }
        while self.order.len() >= self.cap {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        self.map.insert(key.clone(), value);
        self.order.push_back(key);
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get(key)
    }

    pub(crate) fn contains<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.contains_key(key)
    }

    /// Forgets `key` (an entity that came back), returning its value.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let v = self.map.remove(key)?;
        self.order.retain(|k| k.borrow() != key);
        Some(v)
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    #[test]
    fn history_forgets_the_oldest_key_beyond_its_cap() {
        let mut h = History::new(2);
        h.insert(1, ());
        h.insert(2, ());
        h.insert(3, ());
        assert!(!h.contains(&1));
        assert!(h.contains(&2) && h.contains(&3));
        assert_eq!(h.len(), 2);
        assert!(h.remove(&2).is_some());
        assert!(!h.contains(&2));
        assert_eq!(h.len(), 1);
    }
}
