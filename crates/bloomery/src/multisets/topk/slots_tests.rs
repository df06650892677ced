//! The RedisBloom-style list ([`TopKBuilder::redisbloom_list`]): ties, the order of the list,
//! increments of 0, items of count 0, the saved form.

use super::*;
use proptest::prelude::*;

fn slots(k: u32, width: u64, depth: u32) -> TopK {
    TopK::builder(k)
        .width(width)
        .depth(depth)
        .redisbloom_list(true)
        .try_build()
        .unwrap()
}

fn names(t: &TopK) -> Vec<String> {
    t.list()
        .into_iter()
        .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
        .collect()
}

fn add(t: &mut TopK, items: &[&str]) -> Vec<Option<String>> {
    items
        .iter()
        .map(|i| t.insert(*i).map(|e| String::from_utf8(e).unwrap()))
        .collect()
}

/// With k = 2 and rows of 50 buckets the counts are exact, and every step follows from the
/// rule (traced by hand): an arrival whose count equals the first slot's expels it, and the
/// item sinks past a child of equal count, so the array rotates and `LIST` shows ties in
/// array order.
#[test]
fn ties_expel_and_rotate_as_in_redisbloom() {
    let mut t = slots(2, 50, 5);
    // [_, _] → a → [_, a]; b → [a, b]; c ties a (1 = 1): a out → [b, c]; d: b out → [c, d]
    assert_eq!(
        add(&mut t, &["a", "b", "c", "d"]),
        [None, None, Some("a".into()), Some("b".into())]
    );
    assert_eq!(names(&t), ["c", "d"], "equal counts: the array's order");
    assert!(t.contains("c") && t.contains("d") && !t.contains("a"));
    // c again: count 2, it sinks past d (1) → [d, c]
    assert_eq!(add(&mut t, &["c"]), [None]);
    assert_eq!(t.list(), [(&b"c"[..], 2), (&b"d"[..], 1)]);
    assert_eq!((t.count("c"), t.count("d")), (2, 1), "the counts are exact");
}

/// The sequence of RedisBloom 2.6.28's `test_list_info` (its replies are the ones quoted),
/// traced through the rule: the heavier `bar` expels `foo` on a tie of 6.
#[test]
fn redisbloom_list_info_sequence() {
    let mut t = slots(2, 50, 5);
    add(&mut t, &["foo", "bar", "baz", "42", "foo", "bar", "baz"]);
    add(&mut t, &["foo", "baz", "42", "foo", "baz"]);
    add(&mut t, &["foo", "bar", "baz", "foo", "baz"]);
    assert_eq!(names(&t), ["foo", "baz"]);
    assert_eq!(t.list(), [(&b"foo"[..], 6), (&b"baz"[..], 6)]);
    assert_eq!(
        add(&mut t, &["bar", "bar", "bar", "bar", "bar"]),
        [None, None, Some("foo".into()), None, None]
    );
    assert_eq!(t.list(), [(&b"bar"[..], 8), (&b"baz"[..], 6)]);
    // the library's own rule (ties do not expel) keeps foo
    let mut h = TopK::try_with_shape(2, 50, 5, 0.9).unwrap();
    for i in [
        "foo", "bar", "baz", "42", "foo", "bar", "baz", "foo", "baz", "42", "foo",
    ] {
        h.insert(i);
    }
    for i in [
        "baz", "foo", "bar", "baz", "foo", "baz", "bar", "bar", "bar", "bar", "bar",
    ] {
        h.insert(i);
    }
    assert!(h.contains("foo") && !h.is_redisbloom_list());
}

/// An increment of 0 applies the list step alone; an item whose estimate is 0 takes an empty
/// slot, answers `contains` but is not listed, and is reported when a later item expels it.
#[test]
fn zero_estimates_enter_empty_slots_unlisted() {
    // one bucket, owned by a with count 1000: b and c never decay it (0.9^1000)
    let mut t = slots(2, 1, 1);
    assert_eq!(t.incr_by(b"a", 1000), None);
    assert_eq!(t.incr_by(b"b", 0), None, "an empty slot expels nothing");
    assert!(t.contains("b") && t.count("b") == 0);
    assert_eq!(names(&t), ["a"]);
    assert_eq!(t.len(), 1);
    assert_eq!(t.total(), 1000);
    // b (count 0) is in the first slot: c, also at 0, expels it
    assert_eq!(t.incr_by(b"c", 1), Some(b"b".to_vec()));
    assert!(t.contains("c") && !t.contains("b"));
    // the library's own rule: increments of 0 change nothing, zero estimates stay out
    let mut h = TopK::try_with_shape(2, 1, 1, 0.9).unwrap();
    h.incr_by(b"a", 1000);
    assert_eq!(h.incr_by(b"b", 0), None);
    h.incr_by(b"b", 1);
    assert!(!h.contains("b"));
}

/// The list step of RedisBloom 2.6 written out on its own (an array of k slots, recursive
/// sinking), fed with the library's estimates: expelled items, `contains` and the list agree
/// with the library's at every step, on streams with many ties and decays.
#[derive(Debug, Default)]
struct Model {
    slots: Vec<(Option<Vec<u8>>, u32)>,
}

impl Model {
    fn sink(&mut self, i: usize, first: bool) {
        let n = self.slots.len();
        let (l, r) = (2 * i + 1, 2 * i + 2);
        // RedisBloom sinks only from a node with two children in the array's prefix
        if n < 2 || (n - 2) / 2 < i {
            return;
        }
        let c = if r < n && self.slots[l].1 > self.slots[r].1 {
            r
        } else {
            l
        };
        let moves = if first {
            self.slots[c].1 <= self.slots[i].1
        } else {
            self.slots[c].1 < self.slots[i].1
        };
        if moves {
            self.slots.swap(i, c);
            self.sink(c, false);
        }
    }

    fn step(&mut self, item: &[u8], est: u32) -> Option<Vec<u8>> {
        if est < self.slots[0].1 {
            return None;
        }
        if let Some(at) = self.slots.iter().position(|s| s.0.as_deref() == Some(item)) {
            self.slots[at].1 = est;
            self.sink(at, true);
            return None;
        }
        let out = std::mem::replace(&mut self.slots[0], (Some(item.to_vec()), est));
        self.sink(0, true);
        out.0
    }

    fn list(&self) -> Vec<(&[u8], u64)> {
        let mut v: Vec<_> = self
            .slots
            .iter()
            .filter(|s| s.1 > 0)
            .map(|s| (s.0.as_deref().unwrap(), u64::from(s.1)))
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.1));
        v
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn the_list_follows_redisbloom_rule(
        k in 1u32..9,
        width in 1u64..12,
        depth in 1u32..4,
        ops in proptest::collection::vec((0u8..20, 0u32..4), 1..300),
    ) {
        let mut t = slots(k, width, depth);
        let mut m = Model { slots: vec![(None, 0); k as usize] };
        for (x, n) in ops {
            let item = [b'i', x];
            let got = t.incr_by(&item, n);
            let est = t.count(&item[..]) as u32;
            prop_assert_eq!(got, m.step(&item, est));
            prop_assert_eq!(t.list(), m.list());
            for y in 0u8..20 {
                let it = [b'i', y];
                prop_assert_eq!(
                    t.contains(&it[..]),
                    m.slots.iter().any(|s| s.0.as_deref() == Some(&it[..]))
                );
            }
        }
        // and the saved form keeps every slot
        let back = TopK::from_bytes(&t.to_bytes()).unwrap();
        prop_assert_eq!(&back, &t);
        prop_assert_eq!(back.list(), m.list());
    }
}

/// The saved form is kind `topk-slots` and keeps the empty slots, the items of count 0 and
/// the slots' order (heap order not required); malformed slot arrays are refused.
#[test]
fn slots_round_trip_and_malformed_slots_are_refused() {
    let mut t = slots(4, 1, 1);
    t.incr_by(b"a", 1000);
    t.incr_by(b"", 0); // the empty item at count 0: not an empty slot
    let bytes = t.to_bytes();
    let d = format::decode(&bytes, format::Verify::Checksum).unwrap();
    assert_eq!(d.header.kind, Kind::TopKSlots);
    let back = TopK::from_bytes(&bytes).unwrap();
    assert_eq!(back, t);
    assert!(back.is_redisbloom_list() && back.contains("") && back.len() == 1);
    assert_eq!(back.to_bytes(), bytes);
    // a list saved with the library's rule stays so
    let own = TopK::try_with_shape(4, 1, 1, 0.9).unwrap();
    assert!(!TopK::from_bytes(&own.to_bytes())
        .unwrap()
        .is_redisbloom_list());

    // the k slot words follow the buckets' padded part (one bucket → 64 bytes)
    let slot0 = d.payload_offset + 64;
    let word = |b: &[u8], i: usize| {
        u64::from_le_bytes(b[slot0 + 8 * i..slot0 + 8 * i + 8].try_into().unwrap())
    };
    let words: Vec<u64> = (0..4).map(|i| word(&bytes, i)).collect();
    assert_eq!(words.iter().filter(|&&w| w == EMPTY_SLOT).count(), 2);
    let set = |b: &mut Vec<u8>, i: usize, w: u64| {
        b[slot0 + 8 * i..slot0 + 8 * i + 8].copy_from_slice(&w.to_le_bytes());
        super::tests::reseal(b);
    };
    let empty_at = words.iter().position(|&w| w == EMPTY_SLOT).unwrap();
    // an empty slot word in the library's own kind is an item of count 0: refused
    let mut b = bytes.clone();
    b[10..12].copy_from_slice(&Kind::TopK.id().to_le_bytes());
    super::tests::reseal(&mut b);
    assert!(TopK::from_bytes(&b).is_err());
    // a length no slot item may have
    let mut b = bytes.clone();
    set(&mut b, empty_at, EMPTY_SLOT | 1);
    assert!(TopK::from_bytes(&b).is_err());
    // the slot words must match the items' bytes: `a`'s word in the empty item's place
    let a_at = words.iter().position(|&w| w >> 32 == 1).unwrap();
    let e_at = words
        .iter()
        .position(|&w| w != EMPTY_SLOT && w >> 32 == 0)
        .unwrap();
    let mut b = bytes.clone();
    set(&mut b, e_at, words[a_at]);
    assert!(TopK::from_bytes(&b).is_err());
}

/// The k slots are allocated at once and counted in the list's bytes and against the limit.
#[test]
fn slots_take_k_entries_at_once() {
    let t = slots(100, 8, 2);
    assert_eq!(t.heap_bytes(), 100 * ENTRY_BYTES);
    assert!(t.is_empty() && t.list().is_empty());
    assert!(TopK::builder(10_000)
        .redisbloom_list(true)
        .max_bytes(256 * 1024)
        .try_build()
        .is_err());
}

/// `relocate_arrays` moves every heap allocation of the structure (as an allocator that
/// defragments does: a copy in a new allocation, the old one freed) and the structure answers
/// exactly as before, and keeps working.
#[test]
fn relocated_arrays_answer_the_same() {
    use std::alloc::{alloc, dealloc, Layout};
    use std::collections::HashMap;
    use std::ptr::NonNull;

    let mut t = slots(5, 64, 4);
    for i in 0..300u32 {
        t.insert(&(i % 37));
        t.insert("heavy");
    }
    let _ = t.to_bytes(); // the saved list form exists too
    let before = t.clone();
    // every allocation's layout, by address, as an allocator knows them
    let mut layouts: HashMap<usize, Layout> = HashMap::new();
    if !t.buckets.is_mapped() {
        let bytes = t.buckets.allocated_bytes();
        let at = t.buckets.as_slice().as_ptr() as usize;
        layouts.insert(at, Layout::from_size_align(bytes, 64).unwrap());
    }
    let w = t.encoded.get().unwrap();
    layouts.insert(
        w.as_slice().as_ptr() as usize,
        Layout::from_size_align(w.allocated_bytes(), 64).unwrap(),
    );
    layouts.insert(
        t.heap.as_ptr() as usize,
        Layout::array::<Entry>(t.heap.capacity()).unwrap(),
    );
    for e in &t.heap {
        if let Some(i) = e.item.as_ref().filter(|i| i.capacity() > 0) {
            layouts.insert(
                i.as_ptr() as usize,
                Layout::array::<u8>(i.capacity()).unwrap(),
            );
        }
    }
    let mut moved = Vec::new();
    let mut mv = |p: NonNull<u8>| -> Option<NonNull<u8>> {
        let l = *layouts
            .get(&(p.as_ptr() as usize))
            .expect("a known allocation");
        // SAFETY: `l` is the layout `p` was allocated with; the copy stays within both.
        unsafe {
            let new = NonNull::new(alloc(l))?;
            std::ptr::copy_nonoverlapping(p.as_ptr(), new.as_ptr(), l.size());
            dealloc(p.as_ptr(), l);
            moved.push(new.as_ptr() as usize);
            Some(new)
        }
    };
    // SAFETY: the mover copies into an allocation of the global allocator of the same layout
    // and frees the old one.
    unsafe { t.relocate_arrays(&mut mv) };
    assert_eq!(moved.len(), layouts.len(), "every allocation moved");
    assert!(!layouts.contains_key(&(t.heap.as_ptr() as usize)));
    assert_eq!(t, before);
    assert_eq!(t.list(), before.list());
    assert_eq!(t.to_bytes(), before.to_bytes());
    for i in 0..37u32 {
        assert_eq!(t.count(&i), before.count(&i));
    }
    let mut b = before;
    for i in 0..100u32 {
        assert_eq!(t.insert(&(i % 7)), b.insert(&(i % 7)));
    }
    assert_eq!(t, b);
}
