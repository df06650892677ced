//! The cuckoo filter: [`CuckooFilter`] (its docs say which paper it follows and when to pick it).

use crate::error::{inconsistent, invalid, Error, Result};
use crate::filter::{RemoveError, Sizing};
use crate::hash::{mix64, reduce, Hashed, Key, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::store::{self, Words};

/// Most sub-tables a cuckoo filter may grow to.
pub const MAX_TABLES: usize = 64;
/// Largest bucket size accepted (RedisBloom's limit).
pub const MAX_BUCKET_SIZE: u32 = 255;
/// Most evictions an insert may try (RedisBloom's `MAXITERATIONS` limit): bounds the work of
/// one insert, and the undo log it keeps, for created and loaded filters alike.
pub const MAX_ITERATIONS: u32 = 65535;

/// One cuckoo table: `buckets` (a power of two) × `bucket_size` one-byte slots.
#[derive(Debug, Clone, PartialEq)]
pub struct CuckooTable {
    slots: Words,
    buckets: u64,
    bucket_size: u32,
    items: u64,
}

impl CuckooTable {
    fn new(buckets: u64, bucket_size: u32, limit: u64) -> Result<Self> {
        if !buckets.is_power_of_two() {
            return Err(invalid("buckets", "must be a power of two"));
        }
        let bytes = buckets
            .checked_mul(u64::from(bucket_size))
            .ok_or(Error::TooLarge {
                requested: u64::MAX,
                limit,
            })?;
        let words = usize::try_from(bytes.div_ceil(8))
            .map_err(|_| invalid("capacity", "too large for this platform"))?;
        Ok(Self {
            slots: Words::zeroed(words, limit)?,
            buckets,
            bucket_size,
            items: 0,
        })
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        let n = (self.buckets * u64::from(self.bucket_size)) as usize;
        &bytemuck::cast_slice::<u64, u8>(self.slots.as_slice())[..n]
    }

    #[inline]
    fn bytes_mut(&mut self) -> &mut [u8] {
        let n = (self.buckets * u64::from(self.bucket_size)) as usize;
        &mut bytemuck::cast_slice_mut::<u64, u8>(self.slots.as_mut_slice())[..n]
    }

    #[inline]
    fn bucket(&self, i: u64) -> &[u8] {
        let b = self.bucket_size as usize;
        &self.bytes()[i as usize * b..(i as usize + 1) * b]
    }

    /// Buckets.
    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// Slots per bucket.
    pub fn bucket_size(&self) -> u32 {
        self.bucket_size
    }

    /// Fingerprints stored.
    pub fn len(&self) -> u64 {
        self.items
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Slots in all.
    pub fn slots(&self) -> u64 {
        self.buckets * u64::from(self.bucket_size)
    }

    #[inline]
    fn index(&self, h: Hashed) -> u64 {
        reduce(h.lo, self.buckets)
    }

    #[inline]
    fn alt(&self, i: u64, fp: u8) -> u64 {
        (i ^ mix64(u64::from(fp))) & (self.buckets - 1)
    }

    fn count(&self, i1: u64, fp: u8) -> u64 {
        let i2 = self.alt(i1, fp);
        let mut n = self.bucket(i1).iter().filter(|&&s| s == fp).count();
        if i2 != i1 {
            n += self.bucket(i2).iter().filter(|&&s| s == fp).count();
        }
        n as u64
    }

    fn try_put(&mut self, i: u64, fp: u8) -> bool {
        let b = self.bucket_size as usize;
        let base = i as usize * b;
        let bytes = self.bytes_mut();
        if let Some(slot) = bytes[base..base + b].iter_mut().find(|s| **s == 0) {
            *slot = fp;
            return true;
        }
        false
    }

    /// Insert by cuckoo eviction; on failure every move is undone and false is returned.
    fn insert(&mut self, i1: u64, fp: u8, max_iterations: u32, mut rng: u64) -> bool {
        let i2 = self.alt(i1, fp);
        if self.try_put(i1, fp) || self.try_put(i2, fp) {
            self.items = self.items.saturating_add(1);
            return true;
        }
        let b = self.bucket_size as usize;
        let mut path: Vec<(usize, u8)> = Vec::new(); // (slot index, fingerprint it held)
        let mut i = if rng & 1 == 0 { i1 } else { i2 };
        let mut carry = fp;
        for _ in 0..max_iterations {
            rng = mix64(rng);
            let slot = i as usize * b + (rng % b as u64) as usize;
            let bytes = self.bytes_mut();
            let victim = bytes[slot];
            bytes[slot] = carry;
            path.push((slot, victim));
            carry = victim;
            i = self.alt(i, carry);
            if self.try_put(i, carry) {
                self.items = self.items.saturating_add(1);
                return true;
            }
        }
        // undo: restore every displaced fingerprint, newest first
        let bytes = self.bytes_mut();
        for &(slot, victim) in path.iter().rev() {
            bytes[slot] = victim;
        }
        false
    }

    fn remove(&mut self, i1: u64, fp: u8) -> bool {
        let i2 = self.alt(i1, fp);
        let b = self.bucket_size as usize;
        for i in [i1, i2] {
            let base = i as usize * b;
            let bytes = self.bytes_mut();
            if let Some(slot) = bytes[base..base + b].iter_mut().find(|s| **s == fp) {
                *slot = 0;
                self.items -= 1;
                return true;
            }
        }
        false
    }
}

/// The cuckoo filter: a deletable set filter storing short fingerprints in buckets
/// (Fan, Andersen, Kaminsky & Mitzenmacher, "Cuckoo Filter: Practically Better Than Bloom",
/// CoNEXT 2014) — the structure behind RedisBloom's `CF.*` commands, here so bloomery's Redis
/// module can serve them.
///
/// A key's hash gives an 8-bit fingerprint `f` (never 0, which marks an empty slot) and a
/// bucket `i₁`; its alternate bucket is `i₂ = i₁ ⊕ h(f)` (partial-key cuckoo hashing: either
/// bucket and the fingerprint give the other, so entries can move without the key). An insert
/// takes a free slot in either bucket of any sub-table, newest first, or else evicts a random
/// resident of the newest table to its alternate bucket, up to `max_iterations` times. When
/// that fails the eviction chain is undone (nothing is ever lost) and, like RedisBloom, a new
/// sub-table with `expansion` times the buckets is added. Sub-tables are sized as RedisBloom
/// sizes them (`capacity / bucket_size` buckets rounded down, then up to a power of two), and
/// [`compact`](Self::compact) moves fingerprints back into older tables as `CF.COMPACT` does.
/// Adding a key twice stores two copies: `count` reports copies and `remove` deletes one.
///
/// False-positive rate: a query compares its fingerprint with up to `2b` slots per sub-table,
/// so the rate is about `1 - (1 - load/255)^{2b}` per sub-table (≈ `2b/255` when full);
/// [`CuckooFilter::current_fpr`] evaluates it for the current load.
///
/// **When to pick it:** a set with deletions at Bloom-like memory, or a drop-in for RedisBloom's
/// CF type. Unlike a counting Bloom filter, removing a key that was never added can delete
/// another key's matching fingerprint: only remove what you added (RedisBloom has the same
/// contract).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::CuckooFilter;
///
/// let mut f = CuckooFilter::try_new(1000)?;
/// f.insert("alice")?;
/// f.insert("bob")?;
/// assert!(f.contains("alice"));
/// f.remove("alice")?; // deletable: an error (NotPresent) when no fingerprint matches
/// assert!(!f.contains("alice"));
/// assert!(f.contains("bob"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CuckooFilter {
    tables: Vec<CuckooTable>,
    hasher: KeyHasher,
    capacity: u64,
    bucket_size: u32,
    max_iterations: u32,
    expansion: u32,
    deletes: u64,
    max_bytes: u64,
}

/// The validated settings of a new filter.
struct Parts {
    capacity: u64,
    bucket_size: u32,
    max_iterations: u32,
    expansion: u32,
    hasher: KeyHasher,
    max_bytes: u64,
}

/// Builder for [`CuckooFilter`] ([`CuckooFilter::builder`]): the shared [`Sizing`] core
/// (`capacity` required; `hasher`, `seed`, `keyed`, `max_bytes`) plus the cuckoo settings.
/// Defaults are RedisBloom's: bucket size 2, 20 evictions, expansion 1. The 8-bit fingerprint
/// fixes the false-positive rate (about `2b/255` when full), so `fpr`, `bits` and `hashes`
/// are refused by name rather than ignored.
///
/// ```
/// use bloomery::CuckooFilter;
///
/// # fn main() -> bloomery::Result<()> {
/// let f = CuckooFilter::builder()
///     .capacity(1000)
///     .bucket_size(4)
///     .max_iterations(500)
///     .expansion(2)
///     .seed(7)
///     .try_build()?;
/// assert_eq!((f.capacity(), f.bucket_size()), (1000, 4));
/// // a rate does not apply: the fingerprint size fixes it
/// assert!(CuckooFilter::builder().capacity(1000).fpr(0.01).try_build().is_err());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CuckooBuilder {
    sizing: Sizing,
    bucket_size: u32,
    max_iterations: u32,
    expansion: u32,
}

impl CuckooBuilder {
    crate::filter::sizing_setters!();

    /// Slots per bucket (1..=255, default 2).
    pub fn bucket_size(mut self, b: u32) -> Self {
        self.bucket_size = b;
        self
    }
    /// Evictions tried before a table counts as full (1..=65535, default 20).
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.max_iterations = n;
        self
    }
    /// Capacity multiplier for each new table; 0 disables growth (default 1).
    pub fn expansion(mut self, e: u32) -> Self {
        self.expansion = e;
        self
    }

    /// Build, validating every setting.
    pub fn try_build(self) -> Result<CuckooFilter> {
        self.sizing.refuse(
            &["fpr", "bits", "hashes"],
            "a cuckoo filter (its 8-bit fingerprint fixes the rate)",
        )?;
        let capacity = self
            .sizing
            .capacity
            .ok_or_else(|| invalid("capacity", "required"))?;
        CuckooFilter::from_parts(
            capacity,
            self.bucket_size,
            self.max_iterations,
            self.expansion,
            self.sizing.key_hasher(),
            self.sizing.limit(),
        )
    }
}

impl CuckooFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the list of tables, then each table's slots. Arrays in a
    /// map (anonymous or a file's) never move (see `Words::relocate`). `mv` gets an
    /// allocation's address and returns where its bytes are now, or `None` to leave it; it is
    /// called for each allocation once, always in the same order.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least its alignment (64 bytes for the word
    /// arrays), and the old allocation must have been freed; nothing may reference the
    /// structure during the call.
    #[doc(hidden)]
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { store::relocate_vec(&mut self.tables, mv) };
        for t in &mut self.tables {
            // SAFETY: as above.
            unsafe { t.slots.relocate(mv) };
        }
    }

    /// Largest `max_iterations` (evictions tried before an insert fails).
    pub const MAX_ITERATIONS: u32 = MAX_ITERATIONS;
    /// Largest bucket size.
    pub const MAX_BUCKET_SIZE: u32 = MAX_BUCKET_SIZE;

    /// A builder with RedisBloom's defaults (bucket size 2, 20 evictions, expansion 1).
    pub fn builder() -> CuckooBuilder {
        CuckooBuilder {
            sizing: Sizing::default(),
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
        }
    }

    /// A filter with RedisBloom's defaults for `capacity` items. A cuckoo filter takes no
    /// rate: its 8-bit fingerprint fixes it (see [`CuckooBuilder`]).
    pub fn try_new(capacity: u64) -> Result<Self> {
        Self::builder().capacity(capacity).try_build()
    }

    fn from_parts(
        capacity: u64,
        bucket_size: u32,
        max_iterations: u32,
        expansion: u32,
        hasher: KeyHasher,
        max_bytes: u64,
    ) -> Result<Self> {
        let o = Parts {
            capacity,
            bucket_size,
            max_iterations,
            expansion,
            hasher,
            max_bytes,
        };
        crate::params::check_capacity(o.capacity)?;
        if o.bucket_size == 0 || o.bucket_size > MAX_BUCKET_SIZE {
            return Err(invalid(
                "bucket_size",
                format!("must be in 1..={MAX_BUCKET_SIZE}"),
            ));
        }
        if o.max_iterations == 0 || o.max_iterations > MAX_ITERATIONS {
            return Err(invalid(
                "max_iterations",
                format!("must be in 1..={MAX_ITERATIONS}"),
            ));
        }
        store::check_size(o.capacity, o.max_bytes)?;
        let mut f = Self {
            tables: Vec::new(),
            hasher: o.hasher,
            capacity: o.capacity,
            bucket_size: o.bucket_size,
            max_iterations: o.max_iterations,
            expansion: o.expansion,
            deletes: 0,
            max_bytes: o.max_bytes,
        };
        f.grow()?;
        Ok(f)
    }

    /// Buckets of sub-table `i`, sized as RedisBloom sizes them: the first table has
    /// `capacity / bucket_size` buckets (rounded down, then up to a power of two), and each
    /// later one the expansion (rounded up to a power of two) times the one before.
    fn table_buckets(&self, i: usize) -> Result<u64> {
        let growth = u64::from(self.expansion.max(1))
            .next_power_of_two()
            .checked_pow(i as u32)
            .ok_or(Error::TooLarge {
                requested: u64::MAX,
                limit: self.max_bytes,
            })?;
        let first = (self.capacity / u64::from(self.bucket_size))
            .max(1)
            .checked_next_power_of_two()
            .ok_or(Error::TooLarge {
                requested: u64::MAX,
                limit: self.max_bytes,
            })?;
        first.checked_mul(growth).ok_or(Error::TooLarge {
            requested: u64::MAX,
            limit: self.max_bytes,
        })
    }

    fn grow(&mut self) -> Result<()> {
        if self.tables.len() >= MAX_TABLES || (self.expansion == 0 && !self.tables.is_empty()) {
            return Err(Error::Full {
                capacity: self.capacity,
            });
        }
        let buckets = self.table_buckets(self.tables.len())?;
        let used: u64 = self.tables.iter().map(|t| t.slots()).sum();
        let t = CuckooTable::new(
            buckets,
            self.bucket_size,
            self.max_bytes.saturating_sub(used),
        )
        .map_err(|e| store::whole_after_growth(e, used, self.max_bytes))?;
        // one table at a time: the list holds exactly what it needs (memory reports count it)
        self.tables.reserve_exact(1);
        self.tables.push(t);
        Ok(())
    }

    #[inline]
    fn fingerprint(h: Hashed) -> u8 {
        (h.hi % 255) as u8 + 1
    }

    /// Add a key (a second add stores a second copy). As in RedisBloom, a free slot of the
    /// key's two buckets is looked for in every sub-table, newest first; only when there is
    /// none does the insert evict within the newest table, and when that fails it grows. Fails
    /// with [`Error::Full`] when growth is disabled or exhausted — the filter is then
    /// unchanged.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<()> {
        self.insert_hashed(self.hasher.hash(key))
    }

    /// [`insert`](Self::insert) for a pre-hashed key.
    pub fn insert_hashed(&mut self, h: Hashed) -> Result<()> {
        let fp = Self::fingerprint(h);
        let (iters, rng) = (self.max_iterations, h.lo ^ h.hi.rotate_left(17));
        for t in self.tables.iter_mut().rev() {
            let i1 = t.index(h);
            let i2 = t.alt(i1, fp);
            if t.try_put(i1, fp) || t.try_put(i2, fp) {
                t.items = t.items.saturating_add(1);
                return Ok(());
            }
        }
        if let Some(t) = self.tables.last_mut() {
            let i = t.index(h);
            if t.insert(i, fp, iters, rng) {
                return Ok(());
            }
        }
        self.grow()?;
        let t = self
            .tables
            .last_mut()
            .ok_or_else(|| inconsistent("no table"))?;
        let i = t.index(h);
        if t.insert(i, fp, iters, rng) {
            Ok(())
        } else {
            Err(Error::Full {
                capacity: self.capacity,
            })
        }
    }

    /// Add the key only if it is not (as far as the filter can tell) present; returns whether
    /// it was added.
    pub fn insert_unique<K: Key + ?Sized>(&mut self, key: &K) -> Result<bool> {
        let h = self.hasher.hash(key);
        if self.contains_hashed(h) {
            return Ok(false);
        }
        self.insert_hashed(h).map(|_| true)
    }

    /// Whether the key may be present.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hashed(self.hasher.hash(key))
    }

    /// [`contains`](Self::contains) for a pre-hashed key.
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        let fp = Self::fingerprint(h);
        self.tables.iter().any(|t| t.count(t.index(h), fp) > 0)
    }

    /// Copies of the key's fingerprint stored (an upper bound on the times it was added and
    /// not removed).
    pub fn count<K: Key + ?Sized>(&self, key: &K) -> u64 {
        self.count_hashed(self.hasher.hash(key))
    }

    /// [`count`](Self::count) for a pre-hashed key.
    pub fn count_hashed(&self, h: Hashed) -> u64 {
        let fp = Self::fingerprint(h);
        self.tables.iter().map(|t| t.count(t.index(h), fp)).sum()
    }

    /// Remove one copy, as every structure with deletion does ([`Remove`](crate::Remove)):
    /// [`RemoveError::NotPresent`] (and nothing changed) when no matching fingerprint is
    /// stored. Removing a key that was never added may delete another key's fingerprint (see
    /// the module docs).
    ///
    /// ```
    /// use bloomery::{CuckooFilter, RemoveError};
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let mut f = CuckooFilter::try_new(1000)?;
    /// f.insert("a")?;
    /// f.remove("a")?; // through `?`, an absent key is `Error::NotPresent`
    /// assert_eq!(f.remove("a"), Err(RemoveError::NotPresent));
    /// # Ok(()) }
    /// ```
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> std::result::Result<(), RemoveError> {
        let h = self.hasher.hash(key);
        self.remove_hashed(h)
    }

    /// [`remove`](Self::remove) for a pre-hashed key.
    pub fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError> {
        let fp = Self::fingerprint(h);
        for t in self.tables.iter_mut().rev() {
            let i = t.index(h);
            if t.remove(i, fp) {
                self.deletes += 1;
                return Ok(());
            }
        }
        Err(RemoveError::NotPresent)
    }

    /// Move fingerprints from newer sub-tables into free slots of older ones, and drop the
    /// newest tables this leaves empty (the first table always stays); the count of removals
    /// is reset. RedisBloom's `CF.COMPACT`: tables are visited newest first, and
    /// `stop_at_first_failure` ends the pass at the first table that cannot be emptied (what
    /// RedisBloom's deletes trigger) instead of going on to move what fits from the older
    /// ones. Returns the number of tables removed.
    ///
    /// A fingerprint moves only where a lookup of its key finds it: between tables of equal
    /// size always, into a smaller table only when both of its possible primary buckets there
    /// give the same pair of buckets.
    ///
    /// ```
    /// use bloomery::CuckooFilter;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let mut f = CuckooFilter::builder().capacity(64).bucket_size(1).try_build()?;
    /// for i in 0..200u32 {
    ///     f.insert(&i)?;
    /// }
    /// for i in 0..150u32 {
    ///     f.remove(&i)?;
    /// }
    /// let before = f.tables().len();
    /// let removed = f.compact(false);
    /// assert_eq!(f.tables().len(), before - removed);
    /// assert!((150..200u32).all(|i| f.contains(&i)));
    /// # Ok(()) }
    /// ```
    pub fn compact(&mut self, stop_at_first_failure: bool) -> usize {
        let before = self.tables.len();
        for idx in (1..self.tables.len()).rev() {
            let emptied = self.compact_table(idx);
            if emptied && idx == self.tables.len() - 1 {
                self.tables.pop();
            } else if !emptied && stop_at_first_failure {
                break;
            }
        }
        self.tables.shrink_to_fit();
        self.deletes = 0;
        before - self.tables.len()
    }

    /// Move what fits of table `idx` into the older tables; whether it is empty afterwards.
    fn compact_table(&mut self, idx: usize) -> bool {
        let (older, rest) = self.tables.split_at_mut(idx);
        let t = &mut rest[0];
        let b = t.bucket_size as usize;
        for j in 0..t.buckets {
            for k in 0..b {
                let slot = j as usize * b + k;
                let fp = t.bytes()[slot];
                if fp == 0 {
                    continue;
                }
                let moved = older.iter_mut().any(|u| {
                    let Some(c) = Self::bucket_in(t.buckets, j, fp, u.buckets) else {
                        return false;
                    };
                    let put = u.try_put(c, fp) || u.try_put(u.alt(c, fp), fp);
                    if put {
                        u.items = u.items.saturating_add(1);
                    }
                    put
                });
                if moved {
                    t.bytes_mut()[slot] = 0;
                    t.items -= 1;
                }
            }
        }
        t.items == 0
    }

    /// The primary bucket, in a table of `small` buckets, of a fingerprint stored in bucket
    /// `j` of a table of `big` buckets (`small <= big`, both powers of two), when it is
    /// determined: the stored bucket is either the key's primary one or its alternate, and
    /// the two readings must give the same pair of buckets in the smaller table.
    fn bucket_in(big: u64, j: u64, fp: u8, small: u64) -> Option<u64> {
        if small > big {
            return None;
        }
        let shift = big.trailing_zeros() - small.trailing_zeros();
        let m = mix64(u64::from(fp));
        let c1 = j >> shift;
        let c2 = (j ^ (m & (big - 1))) >> shift;
        (c2 == c1 || c2 == c1 ^ (m & (small - 1))).then_some(c1)
    }

    /// Items stored (inserts minus removes).
    pub fn len(&self) -> u64 {
        self.tables.iter().map(|t| t.len()).sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Successful removals so far.
    pub fn deletes(&self) -> u64 {
        self.deletes
    }

    /// The sub-tables, oldest first.
    pub fn tables(&self) -> &[CuckooTable] {
        &self.tables
    }

    /// Initial capacity.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Slots per bucket.
    pub fn bucket_size(&self) -> u32 {
        self.bucket_size
    }

    /// Eviction limit.
    pub fn max_iterations(&self) -> u32 {
        self.max_iterations
    }

    /// Growth factor (0: no growth).
    pub fn expansion(&self) -> u32 {
        self.expansion
    }

    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Bytes of fingerprint storage.
    pub fn allocated_bytes(&self) -> u64 {
        self.tables.iter().map(|t| t.slots()).sum()
    }

    /// Buckets over all tables.
    pub fn buckets(&self) -> u64 {
        self.tables.iter().map(|t| t.buckets()).sum()
    }

    /// The false-positive rate implied by the current load: one minus the chance that none of
    /// the `2b` slots a query reads per table holds its fingerprint.
    pub fn current_fpr(&self) -> f64 {
        let miss: f64 = self
            .tables
            .iter()
            .map(|t| {
                let load = t.len() as f64 / t.slots() as f64;
                (1.0 - load / 255.0).powf(2.0 * f64::from(t.bucket_size()))
            })
            .product();
        1.0 - miss
    }
}

impl Persist for CuckooFilter {
    const KIND: Kind = Kind::Cuckoo;

    /// Slots are bytes in table order; slot j of a table is byte `j % 8` (little-endian
    /// significance) of word `j / 8`, which is the host layout on little-endian machines.
    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut w = ParamWriter::new()
            .u64(self.capacity)
            .u32(self.bucket_size)
            .u32(self.max_iterations)
            .u32(self.expansion)
            .u64(self.deletes)
            .u64(self.max_bytes)
            .u32(self.tables.len() as u32);
        for t in &self.tables {
            w = w.u64(t.buckets).u64(t.items);
        }
        let mut h = Header::new(Kind::Cuckoo, self.hasher);
        h.items = self.len();
        h.capacity = self.capacity;
        h.params = w.finish();
        (
            h,
            Payload::new(self.tables.iter().map(|t| &t.slots).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let capacity = r.u64()?;
        let bucket_size = r.u32()?;
        let max_iterations = r.u32()?;
        let expansion = r.u32()?;
        let deletes = r.u64()?;
        let max_bytes = r.u64()?;
        let count = r.u32()? as usize;
        if capacity == 0
            || bucket_size == 0
            || bucket_size > MAX_BUCKET_SIZE
            || max_iterations == 0
            || max_iterations > MAX_ITERATIONS
            || count == 0
            || count > MAX_TABLES
        {
            return Err(inconsistent("cuckoo parameters out of range"));
        }
        let mut tables = Vec::with_capacity(count);
        let mut offset = d.payload_offset;
        let mut total = 0u64;
        for _ in 0..count {
            let buckets = r.u64()?;
            let items = r.u64()?;
            if !buckets.is_power_of_two() {
                return Err(inconsistent("cuckoo bucket count is not a power of two"));
            }
            let slots = buckets
                .checked_mul(u64::from(bucket_size))
                .ok_or_else(|| inconsistent("cuckoo table too large"))?;
            let words = usize::try_from(slots.div_ceil(8))
                .map_err(|_| inconsistent("cuckoo table too large"))?;
            total = total.saturating_add(format::padded_len(words));
            if total > d.payload_len as u64 {
                return Err(inconsistent("cuckoo tables exceed the payload"));
            }
            let t = CuckooTable {
                slots: src.words(offset, words, limit)?,
                buckets,
                bucket_size,
                items,
            };
            offset += format::padded_len(words) as usize;
            let stored = t.bytes().iter().filter(|&&b| b != 0).count() as u64;
            if stored != items {
                return Err(inconsistent(format!(
                    "cuckoo table holds {stored} fingerprints, header says {items}"
                )));
            }
            if t.bytes_tail_nonzero() {
                return Err(inconsistent("bytes set beyond the last slot"));
            }
            tables.push(t);
        }
        r.finish()?;
        if total != d.payload_len as u64 {
            return Err(inconsistent("payload longer than the cuckoo tables"));
        }
        Ok(Self {
            tables,
            hasher: d.header.hasher,
            capacity,
            bucket_size,
            max_iterations,
            expansion,
            deletes,
            // growth obeys the loading process's limit, whatever the file says
            max_bytes: max_bytes.min(limit),
        })
    }
}

impl CuckooTable {
    fn bytes_tail_nonzero(&self) -> bool {
        let n = (self.buckets * u64::from(self.bucket_size)) as usize;
        bytemuck::cast_slice::<u64, u8>(self.slots.as_slice())[n..]
            .iter()
            .any(|&b| b != 0)
    }
}

impl crate::dispatch::OtherKind for CuckooFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        hashed: true,
        count: true,
        remove: true,
        ..crate::kind::Capabilities::NONE
    };
}

/// Keys as bytes, as a set: an insert adds the key only when the filter does not already
/// report it (a cuckoo filter stores a second copy on a plain [`CuckooFilter::insert`]).
///
/// A filter you delete from should take its keys through [`CuckooFilter::insert`]: a key
/// skipped here because another key's fingerprint answered for it would be lost when that
/// other key is removed.
impl crate::filter::Count for CuckooFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    fn count_hashed(&self, h: Hashed) -> u64 {
        CuckooFilter::count_hashed(self, h)
    }
}

impl crate::filter::Remove for CuckooFilter {
    fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError> {
        CuckooFilter::remove_hashed(self, h)
    }
}

impl crate::filter::KeySet for CuckooFilter {
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        let h = self.hasher.hash_bytes(key);
        if self.contains_hashed(h) {
            return Ok(false);
        }
        self.insert_hashed(h).map(|()| true)
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        Ok(self.contains_hashed(self.hasher.hash_bytes(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_count_remove() {
        let mut f = CuckooFilter::try_new(1000).unwrap();
        for i in 0..800u32 {
            f.insert(&i).unwrap();
        }
        assert!((0..800u32).all(|i| f.contains(&i)));
        f.insert(&5u32).unwrap();
        assert!(f.count(&5u32) >= 2);
        assert_eq!(f.remove(&5u32), Ok(()));
        assert!(f.contains(&5u32));
        assert_eq!(f.remove(&5u32), Ok(()));
        assert_eq!(f.len(), 799);
        // the last copy is gone: refused, and nothing changes
        assert_eq!(f.remove(&5u32), Err(RemoveError::NotPresent));
        assert_eq!(f.len(), 799);
        assert!((0..800u32).filter(|&i| i != 5).all(|i| f.contains(&i)));
    }

    #[test]
    fn grows_without_losing_items() {
        let mut f = CuckooFilter::try_new(100).unwrap();
        for i in 0..5000u32 {
            f.insert(&i).unwrap();
        }
        assert!(f.tables().len() > 1);
        assert!((0..5000u32).all(|i| f.contains(&i)));
    }

    #[test]
    fn no_expansion_reports_full_and_keeps_items() {
        let mut f = CuckooFilter::builder()
            .capacity(64)
            .expansion(0)
            .try_build()
            .unwrap();
        let mut added = Vec::new();
        for i in 0..1000u32 {
            match f.insert(&i) {
                Ok(()) => added.push(i),
                Err(Error::Full { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(added.len() >= 40 && added.len() < 1000);
        assert!(added.iter().all(|i| f.contains(i)));
        assert_eq!(f.len(), added.len() as u64);
    }

    /// RedisBloom's sizing: `capacity / bucket_size` rounded down, then up to a power of two;
    /// the expansion rounded up to a power of two.
    #[test]
    fn tables_are_sized_as_redisbloom_sizes_them() {
        let buckets = |cap: u64, b: u32, e: u32, n: usize| {
            let mut f = CuckooFilter::builder()
                .capacity(cap)
                .bucket_size(b)
                .expansion(e)
                .try_build()
                .unwrap();
            while f.tables().len() < n {
                f.grow().unwrap();
            }
            f.tables().iter().map(|t| t.buckets()).collect::<Vec<_>>()
        };
        assert_eq!(buckets(9, 2, 1, 1), [4]);
        assert_eq!(buckets(1024, 2, 1, 2), [512, 512]);
        assert_eq!(buckets(1000, 2, 1, 1), [512]);
        assert_eq!(buckets(1025, 2, 1, 1), [512]);
        assert_eq!(buckets(1026, 2, 1, 1), [1024]);
        assert_eq!(buckets(100, 3, 3, 3), [64, 256, 1024]);
        assert_eq!(buckets(9, 2, 2, 3), [4, 8, 16]);
    }

    /// Inserts look for a free slot in every sub-table before evicting in the newest, so the
    /// older tables fill up: 1 000 keys in tables of 64 one-slot buckets need at least 16
    /// tables (1 000 / 64), and take about 18 when every table is searched (RedisBloom's
    /// count); evicting only in the newest table leaves each near the 50 % load of two-choice
    /// hashing with one slot per bucket: 26 tables.
    #[test]
    fn inserts_fill_older_tables_first() {
        let mut f = CuckooFilter::builder()
            .capacity(64)
            .bucket_size(1)
            .max_iterations(20)
            .expansion(1)
            .max_bytes(1 << 20)
            .try_build()
            .unwrap();
        for i in 0..1000u32 {
            f.insert(&i).unwrap();
        }
        let n = f.tables().len();
        assert!((16..=20).contains(&n), "{n} tables");
        assert!((0..1000u32).all(|i| f.contains(&i)));
        assert_eq!(f.len(), 1000);
    }

    /// Compaction moves fingerprints into older tables where lookups find them, drops the
    /// emptied newest tables, and never loses a key (tables of equal and of growing size).
    #[test]
    fn compact_moves_down_and_keeps_every_key() {
        for e in [1u32, 2] {
            let mut f = CuckooFilter::builder()
                .capacity(64)
                .bucket_size(2)
                .expansion(e)
                .try_build()
                .unwrap();
            for i in 0..2000u32 {
                f.insert(&i).unwrap();
            }
            let before = f.tables().len();
            assert!(before > 3);
            // a remove may take another key's matching fingerprint (the cuckoo contract), so
            // compaction is checked against what the filter answers just before it
            let removed = (0..1900u32).filter(|i| f.remove(i).is_ok()).count() as u64;
            assert!(removed >= 1890, "{removed}");
            assert_eq!(f.deletes(), removed);
            let len = f.len();
            let found: Vec<u32> = (0..2000u32).filter(|i| f.contains(i)).collect();
            assert!(found.len() >= 100);
            let dropped = f.compact(false);
            assert_eq!(f.tables().len(), before - dropped);
            assert_eq!(f.len(), len);
            assert_eq!(f.deletes(), 0);
            assert!(found.iter().all(|i| f.contains(i)), "expansion {e}");
            let stored: u64 = f.tables().iter().map(|t| t.len()).sum();
            let bytes: u64 = f
                .tables()
                .iter()
                .map(|t| t.bytes().iter().filter(|&&b| b != 0).count() as u64)
                .sum();
            assert_eq!(stored, bytes);
            if e == 1 {
                // about 100 keys fit in the first table's 64 slots and one or two more
                assert!(f.tables().len() <= 3, "{} tables", f.tables().len());
            }
            f.compact(true);
            assert!(found.iter().all(|i| f.contains(i)));
            // the compacted filter still round-trips through the file format
            let g = CuckooFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(f, g);
        }
    }

    #[test]
    fn save_load_roundtrip_and_corruption() {
        let mut f = CuckooFilter::try_new(200).unwrap();
        for i in 0..1000u32 {
            f.insert(&i).unwrap();
        }
        let bytes = f.to_bytes();
        let g = CuckooFilter::from_bytes(&bytes).unwrap();
        assert_eq!(f, g);
        assert!((0..1000u32).all(|i| g.contains(&i)));
        for at in [0, 20, 100, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(CuckooFilter::from_bytes(&bad).is_err());
        }
        assert!(CuckooFilter::from_bytes(&bytes[..bytes.len() - 3]).is_err());
    }

    #[test]
    fn fpr_close_to_load_model() {
        let mut f = CuckooFilter::try_new(20_000).unwrap();
        for i in 0..19_000u32 {
            f.insert(&i).unwrap();
        }
        let q = 200_000u32;
        let fp = (1_000_000..1_000_000 + q).filter(|i| f.contains(i)).count() as f64;
        let p = f.current_fpr();
        let sigma = (q as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (fp - q as f64 * p).abs() < 4.0 * sigma + 0.05 * q as f64 * p,
            "fp {fp} expected {}",
            q as f64 * p
        );
    }

    #[test]
    fn bad_options() {
        assert!(CuckooFilter::try_new(0).is_err());
        let b = || CuckooFilter::builder().capacity(10);
        assert!(b().bucket_size(0).try_build().is_err());
        assert!(b().bucket_size(256).try_build().is_err());
        assert!(b().max_iterations(0).try_build().is_err());
        assert!(
            CuckooFilter::builder().try_build().is_err(),
            "capacity required"
        );
        for (name, r) in [
            ("fpr", b().fpr(0.01).try_build()),
            (
                "bits",
                b().sizing(Sizing::default().capacity(10).bits(64))
                    .try_build(),
            ),
            (
                "hashes",
                b().sizing(Sizing::default().capacity(10).hashes(3))
                    .try_build(),
            ),
        ] {
            match r {
                Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(matches!(
            CuckooFilter::builder()
                .capacity(u64::MAX / 2)
                .max_bytes(1 << 20)
                .try_build(),
            Err(Error::TooLarge { .. })
        ));
    }
}
