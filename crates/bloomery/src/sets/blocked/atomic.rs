//! [`AtomicBlockedBloomFilter`]: many threads inserting through `&self` with atomic ORs.

use super::*;

impl BlockedBloomFilter {
    /// Share for concurrent inserts through `&self` (atomic words).
    pub fn into_atomic(self) -> AtomicBlockedBloomFilter {
        let words = self.as_words().iter().map(|&w| AtomicU64::new(w)).collect();
        let items = AtomicU64::new(self.core.items);
        let mut shape = self;
        shape.core.words = empty_words();
        AtomicBlockedBloomFilter {
            words,
            items,
            shape,
        }
    }
}

#[inline(always)]
fn atomic_insert(atoms: &[AtomicU64], h: Hashed, f: &BlockedBloomFilter) -> bool {
    let (b, half) = place(h, f.blocks, f.layout);
    let mask = Block::mask(h, f.k, f.layout, half);
    let mut new = false;
    for (i, &m) in mask.0.iter().enumerate() {
        if m != 0 {
            let prev = atoms[b + i].fetch_or(m, Ordering::Relaxed);
            new |= prev & m != m;
        }
    }
    new
}

/// A blocked filter that many threads insert into through `&self` (lock-free atomic ORs).
/// Convert with [`BlockedBloomFilter::into_atomic`] and back with
/// [`AtomicBlockedBloomFilter::into_filter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{AtomicBlockedBloomFilter, Filter};
///
/// let f = AtomicBlockedBloomFilter::try_new(100_000, 0.01)?;
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let f = &f;
///         s.spawn(move || {
///             for i in (t * 1000)..(t + 1) * 1000 {
///                 f.insert(&i); // through `&self`, from any thread
///             }
///         });
///     }
/// });
/// assert_eq!(f.len(), 4000);
/// let plain = f.into_filter();
/// assert!((0..4000u64).all(|i| plain.contains(&i)));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AtomicBlockedBloomFilter {
    words: Box<[AtomicU64]>,
    items: AtomicU64,
    /// Shape and hasher (its own words are empty).
    shape: BlockedBloomFilter,
}

impl AtomicBlockedBloomFilter {
    /// Sized for `n` items at rate `p`.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Ok(BlockedBloomFilter::try_new(n, p)?.into_atomic())
    }

    /// Insert from any thread.
    #[inline]
    pub fn insert<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.insert_hashed(self.shape.core.hasher.hash(key))
    }

    /// Insert a pre-hashed key from any thread.
    #[inline]
    pub fn insert_hashed(&self, h: Hashed) -> bool {
        let new = atomic_insert(&self.words, h, &self.shape);
        // Saturating: a count at u64::MAX (a file's own count) stays there; one fetch_add on
        // the hot path, and the rare wrap is undone at once.
        if new && self.items.fetch_add(1, Ordering::Relaxed) == u64::MAX {
            self.items.store(u64::MAX, Ordering::Relaxed);
        }
        new
    }

    /// Query from any thread.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hashed(self.shape.core.hasher.hash(key))
    }

    /// Query a pre-hashed key.
    #[inline]
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        let (b, half) = place(h, self.shape.blocks, self.shape.layout);
        let mask = Block::mask(h, self.shape.k, self.shape.layout, half);
        mask.0
            .iter()
            .enumerate()
            .all(|(i, &m)| m == 0 || self.words[b + i].load(Ordering::Relaxed) & m == m)
    }

    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.shape.core.hasher
    }

    /// Items inserted so far.
    pub fn len(&self) -> u64 {
        self.items.load(Ordering::Relaxed)
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Back to a plain filter (to save, merge or query without atomics).
    pub fn into_filter(self) -> BlockedBloomFilter {
        let mut f = self.shape;
        let mut w = Words::zeroed(self.words.len(), u64::MAX)
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(std::alloc::Layout::new::<u64>()));
        for (d, s) in w.as_mut_slice().iter_mut().zip(self.words.iter()) {
            *d = s.load(Ordering::Relaxed);
        }
        f.core.words = w;
        f.core.items = self.items.load(Ordering::Relaxed);
        f
    }
}
