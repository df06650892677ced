use proptest::prelude::*;

use super::*;
use crate::Persist;

fn keys(prefix: &str, n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}-{i}").into_bytes())
        .collect()
}

/// A positions-layout blocked filter of the layout's whole shape, built from `keys`.
fn whole(layout: &Layout, keys: &[Vec<u8>]) -> BlockedBloomFilter {
    let words = Words::zeroed(
        layout.total_blocks() as usize * WORDS_PER_BLOCK,
        store::max_bytes(),
    )
    .unwrap();
    let mut f = BlockedBloomFilter::from_parts(
        layout.total_blocks(),
        layout.hashes(),
        *layout.hasher(),
        words,
        0,
        layout.capacity(),
        layout.target_fpr(),
    )
    .unwrap();
    for k in keys {
        f.insert(&k.as_slice());
    }
    f
}

#[test]
fn crc16_and_slots_follow_the_cluster_spec() {
    // the specification's check value for CRC16/XMODEM
    assert_eq!(crc16(b"123456789"), 0x31C3);
    assert_eq!(crc16(b""), 0);
    // hash tags: the first {...} with something inside
    assert_eq!(
        key_slot(b"{user1000}.following"),
        key_slot(b"{user1000}.followers")
    );
    assert_eq!(
        key_slot(b"{user1000}.following"),
        crc16(b"user1000") % SLOTS
    );
    assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
    assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") % SLOTS);
    assert_eq!(key_slot(b"foo{bar}{zap}"), crc16(b"bar") % SLOTS);
    assert_eq!(key_slot(b"{unclosed"), crc16(b"{unclosed") % SLOTS);
}

#[test]
fn every_slot_has_a_short_tag() {
    for slot in 0..SLOTS {
        let tag = tag_for_slot(slot);
        assert!(!tag.is_empty() && tag.len() <= 4, "slot {slot}: {tag:?}");
        assert!(tag.iter().all(|c| c.is_ascii_alphanumeric()));
        let mut key = b"{".to_vec();
        key.extend_from_slice(tag);
        key.extend_from_slice(b"}name:g0:s0");
        assert_eq!(key_slot(&key), slot);
    }
}

#[test]
fn shards_land_on_distinct_evenly_spread_slots() {
    for shards in [1u32, 2, 3, 6, 7, 64, 1000, 16383, 16384] {
        let l = Layout::new(shards, 1, 7, KeyHasher::new(), 100, 0.01).unwrap();
        for name in [b"users".as_slice(), b"{weird}name", b""] {
            let slots: Vec<u16> = (0..shards).map(|s| l.shard_slot(name, s)).collect();
            let mut sorted = slots.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), shards as usize, "S = {shards}: slots repeat");
            // consecutive shards are ⌊16384/S⌋ or ⌈16384/S⌉ slots apart (mod 16384)
            let lo = u32::from(SLOTS) / shards;
            let hi = u32::from(SLOTS).div_ceil(shards);
            for w in 0..shards as usize {
                let a = u32::from(slots[w]);
                let b = u32::from(slots[(w + 1) % shards as usize]);
                let gap = (b + u32::from(SLOTS) - a) % u32::from(SLOTS);
                let gap = if gap == 0 { u32::from(SLOTS) } else { gap };
                assert!((lo..=hi).contains(&gap), "S = {shards}: gap {gap}");
            }
            for s in 0..shards.min(50) {
                assert_eq!(key_slot(&l.shard_key(name, s)), slots[s as usize]);
            }
        }
    }
    // different names start at different slots
    let l = Layout::new(4, 1, 7, KeyHasher::new(), 100, 0.01).unwrap();
    assert_ne!(l.shard_slot(b"a", 0), l.shard_slot(b"b", 0));
    // generations name different keys on the same slots
    let g = l.with_generation(5);
    assert_ne!(l.shard_key(b"a", 1), g.shard_key(b"a", 1));
    assert_eq!(
        key_slot(&l.shard_key(b"a", 1)),
        key_slot(&g.shard_key(b"a", 1))
    );
    assert!(g.shard_key(b"a", 1).ends_with(b"a:g5:s1"));
}

#[test]
fn descriptor_round_trips_and_refuses_every_damaged_byte() {
    let l = Layout::for_capacity(1_000_000, 0.001, 6, KeyHasher::with_seed(42))
        .unwrap()
        .with_generation(9);
    let b = l.to_bytes();
    assert_eq!(b.len(), DESCRIPTOR_LEN);
    assert_eq!(Layout::from_bytes(&b).unwrap(), l);
    for i in 0..b.len() {
        for bit in [0x01u8, 0x80] {
            let mut d = b.clone();
            d[i] ^= bit;
            assert!(Layout::from_bytes(&d).is_err(), "byte {i} bit {bit:#x}");
        }
    }
    for n in 0..b.len() {
        assert!(Layout::from_bytes(&b[..n]).is_err());
    }
    let mut long = b.clone();
    long.push(0);
    assert!(Layout::from_bytes(&long).is_err());
    assert!(Layout::from_bytes(b"not a descriptor at all").is_err());
}

/// Fields a valid checksum cannot vouch for are checked one by one.
#[test]
fn descriptor_with_forged_fields_is_refused() {
    let base = Layout::new(4, 10, 7, KeyHasher::new(), 100, 0.01)
        .unwrap()
        .to_bytes();
    let reseal = |at: usize, bytes: &[u8]| {
        let mut d = base.clone();
        d[at..at + bytes.len()].copy_from_slice(bytes);
        let sum = xxhash_rust::xxh3::xxh3_64(&d[..DESCRIPTOR_LEN - 8]);
        d[DESCRIPTOR_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
        Layout::from_bytes(&d)
    };
    assert!(reseal(0, &[0; 0]).is_ok());
    let cases: Vec<(usize, Vec<u8>, &str)> = vec![
        (8, 2u16.to_le_bytes().to_vec(), "version"),
        (10, vec![1], "sectors layout with k = 7"),
        (10, vec![2], "salted layout with k = 7"),
        (10, vec![3], "layout 3"),
        (11, vec![200], "algorithm"),
        (12, vec![200], "seed kind"),
        (29, 0u32.to_le_bytes().to_vec(), "no shards"),
        (29, 16385u32.to_le_bytes().to_vec(), "too many shards"),
        (33, 0u64.to_le_bytes().to_vec(), "no blocks"),
        (33, u64::MAX.to_le_bytes().to_vec(), "overflow"),
        (41, 0u32.to_le_bytes().to_vec(), "k 0"),
        (41, 33u32.to_le_bytes().to_vec(), "k 33"),
        (45, 0u64.to_le_bytes().to_vec(), "capacity 0"),
        (53, f64::NAN.to_le_bytes().to_vec(), "rate NaN"),
        (53, 1.0f64.to_le_bytes().to_vec(), "rate 1"),
        (53, 0.0f64.to_le_bytes().to_vec(), "rate 0"),
    ];
    for (at, bytes, what) in cases {
        assert!(reseal(at, &bytes).is_err(), "{what} accepted");
    }
}

/// A salted descriptor is read back; one whose shape the salted layout cannot have (more than
/// 2^32 blocks in all, k ≠ 8, a hash other than a salted filter's) is refused, checksum or
/// not.
#[test]
fn salted_descriptor_is_read_and_its_shape_checked() {
    let l = Layout::default_for_capacity(100_000, 0.01, 4, KeyHasher::new()).unwrap();
    assert_eq!(l.block_layout(), BlockLayout::Salted);
    assert_eq!(l.hasher().algorithm(), crate::hash::HashAlgorithm::Xxh3_64);
    let base = l.to_bytes();
    assert_eq!(base[10], 2);
    assert_eq!(Layout::from_bytes(&base).unwrap(), l);
    let reseal = |at: usize, bytes: &[u8]| {
        let mut d = base.clone();
        d[at..at + bytes.len()].copy_from_slice(bytes);
        let sum = xxhash_rust::xxh3::xxh3_64(&d[..DESCRIPTOR_LEN - 8]);
        d[DESCRIPTOR_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
        Layout::from_bytes(&d)
    };
    // 4 shards of 2^30 blocks: exactly 2^32 in all, the most the layout holds
    assert!(reseal(33, &(1u64 << 30).to_le_bytes()).is_ok());
    let cases: Vec<(usize, Vec<u8>, &str)> = vec![
        (
            33,
            ((1u64 << 30) + 1).to_le_bytes().to_vec(),
            "2^32 + 4 blocks",
        ),
        (41, 7u32.to_le_bytes().to_vec(), "k = 7"),
        (11, vec![crate::hash::HashAlgorithm::Xxh64.id()], "xxh64"),
        (
            11,
            vec![crate::hash::HashAlgorithm::MurmurHash64A.id()],
            "murmur",
        ),
        // xxh3-128: a salted filter hashes with xxh3-64 (or keyed SipHash)
        (
            11,
            vec![crate::hash::HashAlgorithm::Xxh3_128.id()],
            "xxh3-128",
        ),
    ];
    for (at, bytes, what) in cases {
        let e = reseal(at, &bytes);
        assert!(e.is_err(), "{what} accepted");
        assert!(
            e.unwrap_err().to_string().contains("salted layout"),
            "{what}: the message names the layout"
        );
    }
}

#[test]
fn split_answers_every_key_as_the_whole_filter() {
    let members = keys("member", 20_000);
    let layout = Layout::for_capacity(20_000, 0.01, 8, KeyHasher::with_seed(7)).unwrap();
    let f = whole(&layout, &members);
    assert_eq!(Layout::of_filter(&f, 8).unwrap().total_blocks(), f.blocks());
    let shards: Vec<ScalableBloomFilter> = (0..8).map(|s| layout.split(&f, s).unwrap()).collect();
    // cut with the count apportioned once: the same values, byte for byte
    let apportioned = layout.apportion(&f).unwrap();
    for (s, shard) in shards.iter().enumerate() {
        let cut = layout.split_counted(&f, s as u32, apportioned[s]).unwrap();
        assert_eq!(cut.to_bytes(), shard.to_bytes());
    }
    assert!(layout.split_counted(&f, 8, 0).is_err());
    // cut a group at a time in one pass: the same values again
    for range in [0..8, 2..5, 7..8] {
        let group = layout
            .split_range(
                &f,
                range.clone(),
                &apportioned[range.start as usize..range.end as usize],
            )
            .unwrap();
        assert_eq!(group.len(), range.len());
        for (s, cut) in range.zip(&group) {
            assert_eq!(cut.to_bytes(), shards[s as usize].to_bytes());
        }
    }
    assert!(layout.split_range(&f, 7..9, &[0, 0]).is_err());
    assert!(layout.split_range(&f, 3..3, &[]).is_err());
    assert!(layout.split_range(&f, 0..2, &[0]).is_err());
    // through the module's value format and back
    let shards: Vec<ScalableBloomFilter> = shards
        .iter()
        .map(|s| ScalableBloomFilter::from_bytes(&s.to_bytes()).unwrap())
        .collect();
    let probes = keys("probe", 100_000);
    let mut differ = 0;
    for k in members.iter().chain(&probes) {
        let s = layout.shard_of(k) as usize;
        if shards[s].contains(&k.as_slice()) != f.contains(&k.as_slice()) {
            differ += 1;
        }
    }
    assert_eq!(differ, 0);
    // the counts are the file's, apportioned
    let items: u64 = shards.iter().map(|s| s.len()).sum();
    assert_eq!(items, f.len());
    // built directly from the keys: the same bits, exact counts
    let built = layout
        .build_shards(members.iter().map(|k| k.as_slice()))
        .unwrap();
    for (s, b) in built.iter().enumerate() {
        assert_eq!(b.filters()[0].as_words(), shards[s].filters()[0].as_words());
    }
    assert_eq!(built.iter().map(|s| s.len()).sum::<u64>(), f.len());
}

/// The measured rate of the sharded filter is the blocked model's rate for the whole shape
/// (within 3σ of a binomial over the probes), and that is at most the target. A routing
/// correlated with the block inside the shard (the shard from the top bits of `lo`, the very
/// bits the shard's block choice reads) crowds each shard's keys into a fraction of its
/// blocks: the same measurement sees it far outside the tolerance.
#[test]
fn sharded_rate_is_the_target_and_routing_is_independent() {
    let n = 30_000u64;
    let p = 0.01;
    let layout = Layout::for_capacity(n, p, 6, KeyHasher::with_seed(11)).unwrap();
    let members = keys("m", n);
    let shards = layout
        .build_shards(members.iter().map(|k| k.as_slice()))
        .unwrap();
    let model = crate::params::fpr_blocked(n, layout.total_blocks(), BLOCK_BITS, layout.hashes());
    assert!(model <= p, "model {model} above target {p}");
    let probes = keys("not-a-member", 300_000);
    let m = probes.len() as f64;
    let sigma = (model * (1.0 - model) / m).sqrt();
    let measured = probes
        .iter()
        .filter(|k| shards[layout.shard_of(k) as usize].contains(&k.as_slice()))
        .count() as f64
        / m;
    assert!(
        (measured - model).abs() <= 3.0 * sigma,
        "measured {measured}, model {model}, σ {sigma}"
    );
    // the per-shard model from the shards' counts agrees with the whole's
    let items: Vec<u64> = shards.iter().map(|s| s.len()).collect();
    assert!((layout.current_fpr(&items) - model).abs() < 0.05 * model);

    // negative control: route by the top bits of lo
    let s = u64::from(layout.shards());
    let mut bad = (0..s)
        .map(|_| layout.empty_part().unwrap())
        .collect::<Vec<_>>();
    let route = |h: Hashed| reduce(h.lo, s) as usize;
    for k in &members {
        let h = layout.hasher().hash_bytes(k);
        bad[route(h)].insert_hashed(h);
    }
    let correlated = probes
        .iter()
        .filter(|k| {
            let h = layout.hasher().hash_bytes(k);
            bad[route(h)].contains_hashed(h)
        })
        .count() as f64
        / m;
    assert!(
        correlated > model + 10.0 * sigma,
        "correlated routing {correlated} vs model {model}"
    );
}

#[test]
fn shard_headers_are_checked_against_the_layout() {
    let layout = Layout::for_capacity(5_000, 0.01, 4, KeyHasher::new()).unwrap();
    let shards = layout
        .build_shards(keys("k", 5_000).iter().map(|k| k.as_slice()))
        .unwrap();
    for s in &shards {
        let bytes = s.to_bytes();
        let head = layout
            .check_shard_header(&bytes[..512.min(bytes.len())])
            .unwrap();
        assert_eq!(head.items, s.len());
        assert_eq!(head.len, bytes.len() as u64);
    }
    // another shape, another hasher, another kind, a scaling BF value, garbage
    let other = Layout::for_capacity(50_000, 0.01, 4, KeyHasher::new()).unwrap();
    assert!(other.check_shard_header(&shards[0].to_bytes()).is_err());
    let seeded = Layout::for_capacity(5_000, 0.01, 4, KeyHasher::with_seed(3)).unwrap();
    assert!(seeded.check_shard_header(&shards[0].to_bytes()).is_err());
    let classic = crate::BloomFilter::try_new(100, 0.01).unwrap();
    assert!(layout.check_shard_header(&classic.to_bytes()).is_err());
    let mut grown = ScalableBloomFilter::try_new(10, 0.01).unwrap();
    for i in 0..100u64 {
        grown.insert(&i);
    }
    assert!(layout.check_shard_header(&grown.to_bytes()).is_err());
    assert!(layout.check_shard_header(b"BLOOMERY").is_err());
    assert!(layout.check_shard_header(&[]).is_err());
}

/// A file in the sectors layout, and one in the salted layout (what `create -n -p` makes at
/// 1%), split into shards that answer every key as the file does, through the module's value
/// format, and take the same inserts.
#[test]
fn sectors_files_split_into_shards_that_answer_as_the_file() {
    let sectors = BlockedBloomFilter::builder()
        .layout(BlockLayout::Sectors)
        .capacity(20_000)
        .fpr(0.01)
        .hasher(KeyHasher::with_seed(5))
        .try_build()
        .unwrap();
    eight_bit_file_splits_into_shards_that_answer_as_the_file(sectors, BlockLayout::Sectors);
}

#[test]
fn salted_files_split_into_shards_that_answer_as_the_file() {
    // the default layout at 1%
    let salted = BlockedBloomFilter::builder()
        .capacity(20_000)
        .fpr(0.01)
        .hasher(KeyHasher::with_seed(5))
        .try_build()
        .unwrap();
    assert_eq!(
        salted.hasher().algorithm(),
        crate::hash::HashAlgorithm::Xxh3_64
    );
    eight_bit_file_splits_into_shards_that_answer_as_the_file(salted, BlockLayout::Salted);
}

fn eight_bit_file_splits_into_shards_that_answer_as_the_file(
    mut f: BlockedBloomFilter,
    want: BlockLayout,
) {
    // 16,000 of its 20,000 keys: the shards have room for the inserts below
    let members = keys("member", 16_000);
    assert_eq!(f.layout(), want);
    for k in &members {
        f.insert(&k.as_slice());
    }
    let layout = Layout::of_filter(&f, 4).unwrap();
    assert_eq!(layout.block_layout(), want);
    assert_eq!(layout.to_bytes()[10], layout_id(want));
    let back = Layout::from_bytes(&layout.to_bytes()).unwrap();
    assert_eq!(back, layout);
    let mut shards: Vec<ScalableBloomFilter> = (0..4)
        .map(|s| {
            let bytes = layout.split(&f, s).unwrap().to_bytes();
            layout.check_shard_header(&bytes).unwrap();
            ScalableBloomFilter::from_bytes(&bytes).unwrap()
        })
        .collect();
    for s in &shards {
        assert_eq!(s.filters()[0].layout(), want);
        assert_eq!(s.hasher(), f.hasher());
    }
    let probes = keys("probe", 100_000);
    let differ = |shards: &[ScalableBloomFilter], f: &BlockedBloomFilter| {
        members
            .iter()
            .chain(&probes)
            .filter(|k| {
                shards[layout.shard_of(k) as usize].contains(&k.as_slice())
                    != f.contains(&k.as_slice())
            })
            .count()
    };
    assert_eq!(differ(&shards, &f), 0);
    // the same inserts on both (BF.ADD on a shard): still the same answers
    for k in keys("late", 2_000) {
        let s = layout.shard_of(&k) as usize;
        assert_eq!(
            shards[s].try_insert(&k.as_slice()).unwrap(),
            f.insert(&k.as_slice()),
        );
    }
    assert_eq!(differ(&shards, &f), 0);
    // the positions layout's shards of the same shape are refused, and the other way round
    let positions = Layout::new(
        4,
        layout.blocks_per_shard(),
        8,
        *layout.hasher(),
        layout.capacity(),
        layout.target_fpr(),
    )
    .unwrap();
    assert!(positions.check_shard_header(&shards[0].to_bytes()).is_err());
    let pos_shard = positions.empty_part().unwrap();
    let pos_value = ScalableBloomFilter::single(pos_shard, 10, 0.01);
    assert!(layout.check_shard_header(&pos_value.to_bytes()).is_err());
    // built from keys in the sectors layout: the split's bits
    let mut built = layout.shard_builder().unwrap();
    for k in &members {
        built.insert(k);
    }
    let fresh: Vec<_> = (0..4)
        .map(|s| layout.split(&whole_in(&layout, want, &members), s).unwrap())
        .collect();
    for (b, s) in built.finish().iter().zip(&fresh) {
        assert_eq!(b.filters()[0].as_words(), s.filters()[0].as_words());
    }
    shards.clear();
}

/// `default_for_capacity` lays the shards out as the default filter of (n, p) is laid out
/// (here the salted layout): built from keys, they are the split of that filter built from the
/// same keys, bit for bit; the measured rate of the whole is the sectors model's for its
/// shape (the salted layout's model, within 3σ of a binomial over the probes) and at most the
/// target.
#[test]
fn default_layout_shards_are_the_split_of_the_default_filter() {
    let (n, p) = (30_000u64, 0.01);
    let hasher = KeyHasher::with_seed(11);
    let mut f = BlockedBloomFilter::builder()
        .capacity(n)
        .fpr(p)
        .hasher(hasher)
        .try_build()
        .unwrap();
    assert_eq!(f.layout(), BlockLayout::Salted);
    let members = keys("m", n);
    for k in &members {
        f.insert(&k.as_slice());
    }
    let layout = Layout::default_for_capacity(n, p, 4, hasher).unwrap();
    assert_eq!(layout.block_layout(), BlockLayout::Salted);
    assert_eq!(layout.total_blocks(), f.blocks());
    assert_eq!(layout.hasher(), f.hasher());
    assert_eq!(layout, Layout::of_filter(&f, 4).unwrap());
    let built = layout
        .build_shards(members.iter().map(|k| k.as_slice()))
        .unwrap();
    for (s, b) in built.iter().enumerate() {
        let cut = layout.split(&f, s as u32).unwrap();
        assert_eq!(b.filters()[0].as_words(), cut.filters()[0].as_words());
    }
    let model = crate::params::fpr_sectors(n, layout.total_blocks());
    assert!(model <= p, "model {model} above target {p}");
    let probes = keys("not-a-member", 300_000);
    let m = probes.len() as f64;
    let sigma = (model * (1.0 - model) / m).sqrt();
    let measured = probes
        .iter()
        .filter(|k| built[layout.shard_of(k) as usize].contains(&k.as_slice()))
        .count() as f64
        / m;
    assert!(
        (measured - model).abs() <= 3.0 * sigma,
        "measured {measured}, model {model}, σ {sigma}"
    );
    // a shard count that does not divide the blocks rounds each shard up
    let six = Layout::default_for_capacity(n, p, 6, hasher).unwrap();
    assert_eq!(six.block_layout(), BlockLayout::Salted);
    assert!(six.total_blocks() >= f.blocks() && six.total_blocks().is_multiple_of(6));
    // where 8 bits per key cost too much (10⁻⁵), the positions layout, as the default filter
    let tight = Layout::default_for_capacity(n, 1e-5, 4, hasher).unwrap();
    assert_eq!(tight.block_layout(), BlockLayout::Positions);
    assert_eq!(tight.hasher(), &hasher);
    assert!(Layout::default_for_capacity(0, p, 4, hasher).is_err());
    assert!(Layout::default_for_capacity(n, 1.5, 4, hasher).is_err());
    assert!(Layout::default_for_capacity(n, p, 0, hasher).is_err());
}

/// Building the shards a group at a time (each group passing over the other groups' keys)
/// gives the bits and counts of building them all at once.
#[test]
fn range_builders_build_the_same_shards_in_groups() {
    let members = keys("g", 12_000);
    let layout = Layout::for_capacity(12_000, 0.01, 7, KeyHasher::with_seed(3)).unwrap();
    let all = layout
        .build_shards(members.iter().map(|k| k.as_slice()))
        .unwrap();
    let mut grouped = Vec::new();
    for range in [0..3u32, 3..5, 5..7] {
        let mut b = layout.range_builder(range.clone()).unwrap();
        assert_eq!(b.range(), range);
        for k in &members {
            b.insert(k);
        }
        grouped.extend(b.finish());
    }
    assert_eq!(grouped.len(), all.len());
    for (g, a) in grouped.iter().zip(&all) {
        assert_eq!(g.filters()[0].as_words(), a.filters()[0].as_words());
        assert_eq!(g.len(), a.len());
    }
    assert!(layout.range_builder(0..0).is_err());
    assert!(layout.range_builder(6..8).is_err());
}

fn whole_in(layout: &Layout, block_layout: BlockLayout, keys: &[Vec<u8>]) -> BlockedBloomFilter {
    let mut f = whole(layout, &[]).in_layout(block_layout).unwrap();
    for k in keys {
        f.insert(&k.as_slice());
    }
    f
}

/// Rewrites a file's checksum after a change, so the loader's own checks refuse it.
fn reseal(bytes: &mut [u8]) {
    let n = bytes.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
}

/// The BF value's layouts trailer: written only for a sectors sub-filter (a positions value
/// writes the bytes it always wrote), and distrusted on load: an unknown layout id, the
/// sectors layout with k ≠ 8, or a trailer of the wrong length is a format error.
#[test]
fn bf_value_layout_trailer_is_checked_on_load() {
    let pos = ScalableBloomFilter::try_new(1000, 0.01).unwrap();
    let pos_bytes = pos.to_bytes();
    let plen_at = 28;
    let plen = |b: &[u8]| u32::from_le_bytes(b[plen_at..plen_at + 4].try_into().unwrap()) as usize;
    // positions only: no trailer (count, then 36 bytes per sub-filter, nothing after)
    assert_eq!(plen(&pos_bytes), 41 + 36);

    let f = BlockedBloomFilter::try_with_sectors(64).unwrap();
    let sec = ScalableBloomFilter::single(f, 100, 0.01);
    let good = sec.to_bytes();
    assert_eq!(plen(&good), 41 + 36 + 1);
    let back = ScalableBloomFilter::from_bytes(&good).unwrap();
    assert_eq!(back.filters()[0].layout(), BlockLayout::Sectors);
    let last = 72 + plen(&good) - 1;
    assert_eq!(good[last], 1);
    for bad in [2u8, 0xFF] {
        let mut b = good.clone();
        b[last] = bad;
        reseal(&mut b);
        assert!(
            ScalableBloomFilter::from_bytes(&b).is_err(),
            "layout id {bad}"
        );
    }
    // a trailer of 0 (positions) is read as such
    let mut b = good.clone();
    b[last] = 0;
    reseal(&mut b);
    let p = ScalableBloomFilter::from_bytes(&b).unwrap();
    assert_eq!(p.filters()[0].layout(), BlockLayout::Positions);

    // the sectors layout on a k = 7 sub-filter, and a two-byte trailer for one sub-filter
    let k7 = ScalableBloomFilter::single(
        BlockedBloomFilter::try_with_shape(64, 7).unwrap(),
        100,
        0.01,
    );
    let k7 = k7.to_bytes();
    let n = plen(&k7);
    let forge = |extra: &[u8]| {
        let mut b = k7.clone();
        b[72 + n..72 + n + extra.len()].copy_from_slice(extra);
        b[plen_at..plen_at + 4].copy_from_slice(&((n + extra.len()) as u32).to_le_bytes());
        reseal(&mut b);
        ScalableBloomFilter::from_bytes(&b)
    };
    assert!(forge(&[0]).is_ok());
    assert!(forge(&[1]).is_err());
    assert!(forge(&[0, 0]).is_err());
}

/// A salted sub-filter's BF value: the trailer holds 2, the value loads with the salted
/// layout and the bytes' hasher; a forged trailer is refused before any payload is read when
/// the sub-filter's shape is one the salted layout cannot have (more than 2^32 blocks, k ≠ 8,
/// a hash it does not take), and an unknown layout byte is refused.
#[test]
fn bf_value_salted_trailer_is_checked_on_load() {
    let plen_at = 28;
    let plen = |b: &[u8]| u32::from_le_bytes(b[plen_at..plen_at + 4].try_into().unwrap()) as usize;
    let mut f = BlockedBloomFilter::try_with_salted(64).unwrap();
    for i in 0..200u64 {
        f.insert(&i);
    }
    let sal = ScalableBloomFilter::single(f.clone(), 300, 0.01);
    let good = sal.to_bytes();
    assert_eq!(plen(&good), 41 + 36 + 1);
    let last = 72 + plen(&good) - 1;
    assert_eq!(good[last], 2);
    let back = ScalableBloomFilter::from_bytes(&good).unwrap();
    assert_eq!(back.filters()[0].layout(), BlockLayout::Salted);
    assert_eq!(back, sal);
    assert!((0..200u64).all(|i| back.contains(&i)));
    let differ = (0..100_000u64)
        .filter(|i| back.contains(i) != f.contains(i))
        .count();
    assert_eq!(differ, 0);

    let forge = |at: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        reseal(&mut b);
        ScalableBloomFilter::from_bytes(&b)
    };
    // unknown layout bytes
    for bad in [3u8, 0xFF] {
        assert!(forge(last, &[bad]).is_err(), "layout id {bad}");
    }
    let sub = 72 + 41; // the sub-filter's blocks, then k
    let salted_error = |at: usize, bytes: &[u8], what: &str| {
        let e = forge(at, bytes).unwrap_err().to_string();
        assert!(e.contains("salted layout"), "{what}: {e}");
    };
    // 2^32 + 1 blocks: refused for the layout, not for the missing payload
    salted_error(sub, &((1u64 << 32) + 1).to_le_bytes(), "blocks");
    salted_error(sub + 8, &7u32.to_le_bytes(), "k = 7");
    // the header's hash algorithm (byte 24) set to xxh64, then to MurmurHash64A
    assert_eq!(good[24], crate::hash::HashAlgorithm::Xxh3_64.id());
    for algo in [
        crate::hash::HashAlgorithm::Xxh64,
        crate::hash::HashAlgorithm::MurmurHash64A,
    ] {
        salted_error(24, &[algo.id()], algo.name());
    }
}

#[test]
fn of_filter_refuses_unsized_and_indivisible_shapes() {
    let sectors = BlockedBloomFilter::try_with_sectors(64).unwrap();
    // an explicit shape has no capacity or rate to put in the descriptor
    assert!(Layout::of_filter(&sectors, 2).is_err());
    let unsized_ = BlockedBloomFilter::try_with_shape(64, 7).unwrap();
    assert!(Layout::of_filter(&unsized_, 2).is_err());
    let odd = whole(
        &Layout::new(1, 63, 7, KeyHasher::new(), 100, 0.01).unwrap(),
        &[],
    );
    let e = Layout::of_filter(&odd, 2).unwrap_err().to_string();
    assert!(e.contains("3, 7, 9, 21, 63"), "{e}");
    assert!(Layout::of_filter(&odd, 3).is_ok());
    assert!(Layout::of_filter(&odd, 0).is_err());
    // a split with another shape or a shard out of range is refused
    let l = Layout::of_filter(&odd, 3).unwrap();
    assert!(l.split(&odd, 3).is_err());
    let other = whole(
        &Layout::new(1, 66, 7, KeyHasher::new(), 100, 0.01).unwrap(),
        &[],
    );
    assert!(l.split(&other, 0).is_err());
}

#[test]
fn apportion_sums_to_the_total() {
    assert_eq!(apportion(10, &[1.0, 1.0, 1.0]), vec![4, 3, 3]);
    assert_eq!(apportion(0, &[1.0, 2.0]), vec![0, 0]);
    assert_eq!(apportion(7, &[0.0, 0.0]), vec![4, 3]);
    assert_eq!(
        apportion(u64::MAX, &[1.0, 1.0])
            .iter()
            .map(|&x| x as u128)
            .sum::<u128>(),
        u64::MAX as u128
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn no_false_negatives(n in 1u64..3_000, shards in 1u32..17, seed in any::<u64>()) {
        let layout = Layout::for_capacity(n, 0.01, shards, KeyHasher::with_seed(seed)).unwrap();
        let members: Vec<Vec<u8>> = (0..n).map(|i| (i ^ seed).to_le_bytes().to_vec()).collect();
        let built = layout.build_shards(members.iter().map(|k| k.as_slice())).unwrap();
        let f = whole(&layout, &members);
        let split: Vec<_> = (0..shards).map(|s| layout.split(&f, s).unwrap()).collect();
        for k in &members {
            let s = layout.shard_of(k) as usize;
            prop_assert!(built[s].contains(&k.as_slice()));
            prop_assert!(split[s].contains(&k.as_slice()));
        }
    }
}

#[test]
fn shard_streams_are_the_bytes_of_the_cut_shards() {
    let members = keys("member", 5_000);
    let positions = Layout::for_capacity(20_000, 0.01, 4, KeyHasher::with_seed(3)).unwrap();
    let eight_bit = |layout| {
        BlockedBloomFilter::builder()
            .layout(layout)
            .capacity(20_000)
            .fpr(0.01)
            .hasher(KeyHasher::with_seed(5))
            .try_build()
            .unwrap()
    };
    for (block_layout, mut f) in [
        (BlockLayout::Positions, whole(&positions, &[])),
        (BlockLayout::Sectors, eight_bit(BlockLayout::Sectors)),
        (BlockLayout::Salted, eight_bit(BlockLayout::Salted)),
    ] {
        for k in &members {
            f.insert(&k.as_slice());
        }
        let layout = Layout::of_filter(&f, 4).unwrap();
        let items = layout.apportion(&f).unwrap();
        for s in 0..4 {
            let cut = layout
                .split_counted(&f, s, items[s as usize])
                .unwrap()
                .to_bytes();
            // chunks of every size: a block, several blocks, less than a block (one block
            // then), more than the whole payload
            for max in [64, 640, 1, 1 << 30] {
                let mut stream = layout.shard_stream(&f, s, items[s as usize]).unwrap();
                assert_eq!(stream.len(), cut.len() as u64);
                assert_eq!(stream.shard(), s);
                let mut out = Vec::new();
                let mut chunks = 0;
                while let Some(it) = stream.next_chunk(max, &mut out) {
                    assert_eq!(it, out.len() as u64, "the iterator is the offset after");
                    chunks += 1;
                    if chunks == 1 {
                        let head = crate::io::header::peek(&out).unwrap();
                        assert_eq!(head.header_len as usize, out.len(), "the header alone");
                    }
                }
                assert_eq!(out, cut, "{block_layout:?} shard {s} in chunks of {max}");
                assert_eq!(stream.next_chunk(max, &mut out), None);
            }
        }
        assert!(layout.shard_stream(&f, 4, 0).is_err());
    }
}
