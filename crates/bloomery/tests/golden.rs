//! Golden tests: the key → bits mapping and the version-1 file format, pinned.
//!
//! The hash of an existing format version never changes ("Hashing"), so the expected
//! values below are literals, not recomputed: a change to `hash.rs`, to the blocked layout
//! (block index and in-block mask) or to the split-block spec path fails here.
//!
//! `tests/golden/v1/*.bloom` are files of format version 1, one (or more) per structure kind,
//! written by [`regenerate`]. **Goldens of a released version must never be regenerated, only
//! added**: a file that no longer loads, or loads to different bits, is a broken promise to
//! every user who saved a filter. `regenerate` therefore only writes files that are missing:
//!
//! ```text
//! cargo test -p bloomery --test golden -- --ignored regenerate --nocapture
//! ```
//!
//! (it also prints the literal tables used below, for adding new cases.)

use std::path::PathBuf;

use bloomery::builders::{BlockLayout, WindowLayout};
use bloomery::hashing::{HashAlgorithm, SeedKind};
use bloomery::prelude::*;
use bloomery::{AgePartitionedBloomFilter, Kind};

/// The hashers whose mapping is pinned: default xxh3-128, seeded xxh3-128, keyed
/// SipHash-1-3-128 with a fixed secret, and Parquet's xxh64.
fn hashers() -> [(&'static str, KeyHasher); 4] {
    [
        ("xxh3 default", KeyHasher::new()),
        ("xxh3 seed", KeyHasher::with_seed(0x005E_ED0F_B100_0001)),
        (
            "siphash keyed",
            KeyHasher::with_secret(0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF),
        ),
        ("xxh64 parquet", KeyHasher::parquet()),
    ]
}

/// Fixed keys: empty, short, longer than xxh3's 16/128/240-byte thresholds, and an integer
/// (hashed as its little-endian bytes).
fn keys() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("empty", Vec::new()),
        ("a", b"a".to_vec()),
        ("bloomery", b"bloomery".to_vec()),
        ("long", (0..300u32).map(|i| (i * 7 % 251) as u8).collect()),
        ("u64 42", 42u64.to_le_bytes().to_vec()),
    ]
}

// ---------------------------------------------------------------------------------------------
// Expected values (generated once by `regenerate`, then frozen).
// ---------------------------------------------------------------------------------------------

/// `hash(key)` as (lo, hi) for every hasher × key, hasher-major.
const HASHES: [(u64, u64); 20] = [
    (0x6001c324468d497f, 0x99aa06d3014798d8),
    (0xe6c632b61e964e1f, 0xa96faf705af16834),
    (0x30677db7ab3c53a0, 0x0c703415229c1045),
    (0x21869f12772ec1b4, 0x4029cdb87f88df4d),
    (0x61c2164e8b895a45, 0x9bab3e2f55e1fe86),
    (0x80bb71854ad0768a, 0x90574c81e09537ca),
    (0x13e4ea1887f8b8af, 0x53d3daaf452f0759),
    (0x15fae319e96c37c1, 0xd6bc51005fc0d55e),
    (0x8ac075e164a47046, 0xe970fe206278bb54),
    (0x6900fc07f5372826, 0xed1daee9bb86ad44),
    (0x98ac96bdd3fadb9b, 0x1748af72591d4fc1),
    (0x1aea66f2f037350c, 0x574f063811aaeaca),
    (0x5a5e8f9110cd853e, 0xb87b61c4822b029b),
    (0xee11be0cc8d6c4b3, 0xa6dedfab895c9bf2),
    (0xe7fb74263dcd144d, 0x32c9c450d411ba10),
    (0xef46db3751d8e999, 0xe8780cfcd2ada444),
    (0xd24ec4f1a98c6e5b, 0x37e2cad4e004f963),
    (0x3e3803a5ad74674a, 0xbaed2e6a9cc2b7be),
    (0x59011088bf95a431, 0xe60f9fc65ea7a88f),
    (0xb556806fb6d14353, 0x4206f5ea5df8f4d1),
];

/// Blocked counting filter, 16 lines of 4-bit counters, k = 7: (line, counter positions).
const BLOCKED_COUNTING_W4_K7: [(u64, [u64; 7]); 20] = [
    (6, [76, 106, 64, 109, 24, 5, 15]),
    (14, [84, 91, 117, 119, 2, 107, 98]),
    (3, [6, 28, 6, 65, 41, 10, 56]),
    (2, [32, 10, 57, 91, 67, 126, 17]),
    (6, [77, 106, 103, 98, 122, 87, 67]),
    (8, [72, 21, 105, 72, 15, 2, 42]),
    (1, [41, 116, 123, 42, 122, 20, 94]),
    (1, [107, 47, 10, 16, 2, 127, 1]),
    (8, [116, 92, 31, 98, 3, 9, 113]),
    (6, [118, 71, 53, 110, 77, 110, 13]),
    (9, [11, 82, 21, 119, 18, 100, 58]),
    (1, [43, 83, 96, 99, 64, 70, 85]),
    (5, [92, 30, 108, 28, 36, 8, 86]),
    (14, [83, 55, 91, 122, 92, 37, 57]),
    (14, [25, 50, 56, 69, 6, 80, 35]),
    (14, [116, 30, 1, 79, 102, 74, 91]),
    (13, [27, 120, 89, 45, 39, 0, 9]),
    (3, [93, 59, 37, 102, 84, 115, 5]),
    (5, [115, 3, 115, 124, 50, 122, 79]),
    (11, [33, 1, 94, 94, 82, 119, 113]),
];

/// Blocked counting filter, 16 lines of 3-bit counters (170 per line), k = 16: the positions.
const BLOCKED_COUNTING_W3_K16: [[u64; 16]; 20] = [
    [
        102, 7, 41, 76, 23, 9, 67, 67, 13, 26, 41, 46, 132, 84, 154, 58,
    ],
    [
        112, 87, 130, 51, 149, 21, 10, 98, 86, 54, 78, 45, 55, 75, 157, 67,
    ],
    [
        8, 44, 28, 62, 65, 59, 51, 143, 97, 73, 98, 163, 154, 142, 3, 101,
    ],
    [
        42, 103, 73, 147, 49, 72, 126, 85, 83, 155, 164, 117, 125, 72, 109, 159,
    ],
    [
        103, 63, 95, 74, 91, 147, 54, 96, 75, 166, 85, 86, 96, 16, 169, 95,
    ],
    [
        95, 144, 126, 167, 38, 124, 32, 85, 55, 111, 101, 103, 70, 141, 40, 6,
    ],
    [
        55, 113, 58, 114, 119, 31, 117, 154, 25, 66, 136, 124, 108, 103, 31, 121,
    ],
    [
        142, 101, 108, 58, 160, 133, 25, 164, 155, 37, 18, 6, 37, 138, 91, 4,
    ],
    [
        155, 3, 58, 53, 72, 139, 133, 145, 130, 50, 153, 80, 57, 146, 23, 37,
    ],
    [
        157, 78, 28, 89, 153, 135, 11, 42, 28, 167, 97, 111, 41, 35, 80, 58,
    ],
    [
        15, 78, 91, 51, 119, 128, 17, 63, 102, 169, 81, 60, 126, 12, 166, 166,
    ],
    [
        57, 166, 56, 87, 33, 141, 67, 48, 43, 80, 21, 6, 26, 58, 21, 82,
    ],
    [
        122, 86, 48, 42, 114, 13, 109, 146, 157, 35, 34, 113, 108, 145, 6, 121,
    ],
    [
        110, 138, 21, 82, 50, 165, 135, 105, 35, 142, 19, 128, 133, 55, 105, 101,
    ],
    [
        33, 123, 86, 9, 21, 139, 164, 159, 9, 1, 142, 146, 152, 32, 24, 40,
    ],
    [
        154, 63, 96, 4, 40, 103, 67, 128, 129, 14, 27, 24, 141, 125, 111, 62,
    ],
    [
        37, 18, 169, 26, 24, 72, 119, 131, 100, 159, 167, 31, 168, 169, 29, 57,
    ],
    [
        124, 22, 42, 33, 142, 99, 115, 69, 36, 146, 16, 133, 150, 71, 11, 35,
    ],
    [
        152, 131, 124, 122, 127, 71, 66, 157, 103, 12, 45, 100, 152, 127, 66, 126,
    ],
    [
        43, 143, 144, 106, 24, 160, 159, 1, 142, 151, 126, 85, 34, 96, 130, 3,
    ],
];

/// `hash(key).indices(7, 1_000_003)` for every hasher × key.
const INDICES: [[u64; 7]; 20] = [
    [375028, 975280, 575529, 175779, 776031, 376281, 976533],
    [901464, 563323, 225183, 887045, 548905, 210764, 872626],
    [189079, 237666, 286254, 334841, 383428, 432015, 480603],
    [130960, 381599, 632238, 882876, 133512, 384150, 634789],
    [381868, 989952, 598032, 206113, 814197, 422277, 30358],
    [502861, 66692, 630526, 194356, 758190, 322021, 885855],
    [77711, 405164, 732616, 60066, 387518, 714970, 42420],
    [85859, 924673, 763483, 602294, 441104, 279915, 118725],
    [542000, 453880, 365761, 277641, 189521, 101401, 13281],
    [410172, 336406, 262640, 188874, 115108, 41342, 967579],
    [596385, 687338, 778291, 869244, 960197, 51147, 142100],
    [105139, 446190, 787240, 128288, 469338, 810389, 151437],
    [353006, 73638, 794273, 514904, 235536, 956171, 676803],
    [929961, 581798, 233635, 885475, 537312, 189150, 840990],
    [906183, 104572, 302963, 501355, 699747, 898139, 96528],
    [934677, 842759, 750840, 658922, 567003, 475085, 383167],
    [821516, 39818, 258123, 476428, 694733, 913038, 131340],
    [243042, 973226, 703407, 433588, 163769, 893952, 624133],
    [347673, 246349, 145024, 43700, 942378, 841054, 739730],
    [708353, 966272, 224189, 482108, 740028, 997947, 255864],
];

/// Set bits of a blocked filter (16 blocks) after inserting one key, k = 7 and k = 16 (the
/// second exercises the derived words for k > 7), every hasher × key.
const BLOCKED_K7: [[u64; 7]; 20] = [
    [3153, 3168, 3174, 3181, 3288, 3408, 3532],
    [7179, 7220, 7333, 7348, 7356, 7415, 7549],
    [1544, 1585, 1605, 1700, 1703, 1857, 1921],
    [1135, 1243, 1280, 1295, 1357, 1358, 1506],
    [3182, 3206, 3327, 3417, 3448, 3554, 3562],
    [4133, 4156, 4161, 4251, 4282, 4296, 4554],
    [670, 843, 847, 857, 899, 938, 1000],
    [523, 618, 784, 858, 862, 994, 1008],
    [4108, 4189, 4254, 4436, 4487, 4517, 4578],
    [3297, 3309, 3310, 3383, 3396, 3414, 3508],
    [4677, 4679, 4683, 4701, 4775, 4855, 5057],
    [611, 618, 632, 714, 770, 861, 885],
    [2588, 2698, 2704, 2715, 2785, 2945, 3035],
    [7245, 7255, 7323, 7414, 7537, 7666, 7674],
    [7184, 7194, 7237, 7246, 7371, 7389, 7428],
    [7236, 7339, 7375, 7378, 7578, 7585, 7616],
    [6657, 6780, 6812, 6829, 6879, 6934, 7011],
    [1766, 1771, 1840, 1875, 1883, 1897, 1982],
    [2684, 2703, 2763, 2968, 2985, 3028, 3068],
    [5687, 5754, 5841, 5896, 5963, 5982, 6014],
];
const BLOCKED_K16: [[u64; 16]; 20] = [
    [
        3083, 3093, 3153, 3168, 3174, 3181, 3288, 3397, 3408, 3413, 3428, 3476, 3477, 3511, 3532,
        3532,
    ],
    [
        7170, 7179, 7220, 7249, 7316, 7324, 7333, 7348, 7354, 7356, 7415, 7429, 7432, 7469, 7549,
        7578,
    ],
    [
        1544, 1585, 1605, 1649, 1690, 1700, 1703, 1771, 1788, 1857, 1888, 1912, 1920, 1921, 1954,
        2027,
    ],
    [
        1026, 1071, 1135, 1220, 1224, 1243, 1280, 1295, 1331, 1357, 1358, 1497, 1506, 1516, 1522,
        1529,
    ],
    [
        3140, 3172, 3182, 3206, 3243, 3324, 3327, 3417, 3448, 3469, 3515, 3530, 3553, 3554, 3558,
        3562,
    ],
    [
        4097, 4119, 4133, 4156, 4161, 4231, 4251, 4253, 4282, 4296, 4398, 4448, 4471, 4493, 4554,
        4593,
    ],
    [
        559, 581, 588, 670, 779, 843, 847, 857, 867, 899, 913, 928, 938, 971, 979, 1000,
    ],
    [
        523, 618, 626, 695, 716, 719, 736, 779, 784, 800, 820, 858, 862, 993, 994, 1008,
    ],
    [
        4108, 4110, 4189, 4254, 4358, 4360, 4425, 4436, 4462, 4487, 4517, 4547, 4557, 4578, 4594,
        4604,
    ],
    [
        3079, 3160, 3188, 3297, 3309, 3310, 3326, 3383, 3389, 3396, 3414, 3417, 3442, 3491, 3502,
        3508,
    ],
    [
        4669, 4675, 4677, 4679, 4683, 4701, 4765, 4775, 4853, 4855, 4889, 4915, 4921, 4942, 4991,
        5057,
    ],
    [
        512, 551, 568, 611, 618, 632, 714, 746, 770, 787, 802, 854, 861, 885, 946, 968,
    ],
    [
        2562, 2567, 2588, 2590, 2601, 2627, 2637, 2698, 2704, 2715, 2785, 2933, 2945, 2963, 2987,
        3035,
    ],
    [
        7187, 7197, 7245, 7255, 7273, 7289, 7323, 7348, 7414, 7426, 7459, 7496, 7537, 7547, 7666,
        7674,
    ],
    [
        7184, 7191, 7194, 7198, 7236, 7237, 7246, 7313, 7339, 7371, 7389, 7428, 7496, 7587, 7614,
        7655,
    ],
    [
        7226, 7236, 7265, 7298, 7339, 7375, 7376, 7378, 7431, 7467, 7503, 7507, 7568, 7578, 7585,
        7616,
    ],
    [
        6656, 6657, 6748, 6780, 6812, 6829, 6851, 6879, 6901, 6934, 6936, 6993, 6996, 7011, 7106,
        7106,
    ],
    [
        1620, 1648, 1676, 1766, 1771, 1815, 1840, 1875, 1883, 1897, 1933, 1952, 1967, 1982, 2011,
        2012,
    ],
    [
        2567, 2684, 2695, 2696, 2703, 2737, 2763, 2951, 2954, 2968, 2970, 2985, 2997, 3028, 3051,
        3068,
    ],
    [
        5643, 5676, 5687, 5754, 5773, 5799, 5810, 5841, 5887, 5896, 5928, 5963, 5978, 5982, 6014,
        6141,
    ],
];

/// Split-block filter of 16 blocks after `insert_hash(h)`: the block index and its eight 32-bit
/// words, for fixed 64-bit hashes.
const SPLIT_HASHES: [u64; 4] = [0, 1, 0x0123_4567_89AB_CDEF, u64::MAX];
const SPLIT_WORDS: [(u64, [u32; 8]); 4] = [
    (
        0,
        [
            0x00000001, 0x00000001, 0x00000001, 0x00000001, 0x00000001, 0x00000001, 0x00000001,
            0x00000001,
        ],
    ),
    (
        0,
        [
            0x00000100, 0x00000100, 0x00020000, 0x00100000, 0x00004000, 0x00000020, 0x00080000,
            0x00000800,
        ],
    ),
    (
        0,
        [
            0x00040000, 0x00080000, 0x40000000, 0x00800000, 0x00000010, 0x00010000, 0x00001000,
            0x01000000,
        ],
    ),
    (
        15,
        [
            0x00800000, 0x00800000, 0x00004000, 0x00000800, 0x00020000, 0x04000000, 0x00001000,
            0x00100000,
        ],
    ),
];

// ---------------------------------------------------------------------------------------------

fn set_bits(words: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for (w, &x) in words.iter().enumerate() {
        for b in 0..64 {
            if x >> b & 1 == 1 {
                out.push(w as u64 * 64 + b);
            }
        }
    }
    out
}

fn cases() -> Vec<(String, KeyHasher, Vec<u8>)> {
    let mut v = Vec::new();
    for (hn, h) in hashers() {
        for (kn, k) in keys() {
            v.push((format!("{hn} / {kn}"), h, k));
        }
    }
    v
}

fn blocked_bits(h: KeyHasher, key: &[u8], k: u32) -> Vec<u64> {
    let mut f = BlockedBloomFilter::builder()
        .bits(16 * 512)
        .hashes(k)
        .hasher(h)
        .try_build()
        .unwrap();
    f.insert(key);
    set_bits(f.as_words())
}

fn split_words(h: u64) -> (u64, [u32; 8]) {
    let mut f = SplitBlockBloomFilter::try_with_bytes(16 * 32).unwrap();
    f.insert_hash(h);
    let bytes = f.to_parquet_bitset();
    let nonzero: Vec<usize> = (0..16)
        .filter(|b| bytes[b * 32..b * 32 + 32].iter().any(|&x| x != 0))
        .collect();
    assert_eq!(nonzero.len(), 1, "one key touches one block");
    let b = nonzero[0];
    let mut w = [0u32; 8];
    for (i, w) in w.iter_mut().enumerate() {
        let at = b * 32 + i * 4;
        *w = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    }
    (b as u64, w)
}

#[test]
fn hash_values_are_pinned() {
    for (i, (name, h, key)) in cases().into_iter().enumerate() {
        let got = h.hash(&key[..]);
        assert_eq!((got.lo, got.hi), HASHES[i], "hash of {name}");
        let idx: Vec<u64> = got.indices(7, 1_000_003).collect();
        assert_eq!(idx, INDICES[i], "indices of {name}");
    }
}

#[test]
fn hash_algorithms_match_their_reference_functions() {
    // Independent of the literals: the documented definition of each algorithm.
    for (_, key) in keys() {
        let h = KeyHasher::with_seed(99).hash(&key[..]);
        let r = xxhash_rust::xxh3::xxh3_128_with_seed(&key, 99);
        assert_eq!((h.lo, h.hi), (r as u64, (r >> 64) as u64));
        let p = KeyHasher::parquet().hash(&key[..]);
        assert_eq!(p.lo, xxhash_rust::xxh64::xxh64(&key, 0));
    }
    let h = KeyHasher::new();
    assert_eq!(h.algorithm(), HashAlgorithm::Xxh3_128);
    assert_eq!(h.seed_kind(), SeedKind::Default);
    assert_eq!(HashAlgorithm::Xxh3_128.id(), 1);
    assert_eq!(HashAlgorithm::SipHash13_128.id(), 2);
    assert_eq!(HashAlgorithm::Xxh64.id(), 3);
    assert_eq!(HashAlgorithm::Xxh3_64.id(), 6);
    for (kind, id) in [
        (Kind::Classic, 1),
        (Kind::Partitioned, 2),
        (Kind::Blocked, 3),
        (Kind::SplitBlock, 4),
        (Kind::Scalable, 5),
        (Kind::BlockedSectors, 20),
        (Kind::BlockedSalted, 31),
        (Kind::BlockedSalted256, 32),
        (Kind::Window, 27),
        (Kind::TimeWindow, 29),
        (Kind::WindowBlocked, 30),
    ] {
        assert_eq!(kind.id(), id);
        assert_eq!(Kind::from_id(id), Some(kind));
    }
}

#[test]
fn classic_and_partitioned_use_the_pinned_indices() {
    for (i, (name, h, key)) in cases().into_iter().enumerate() {
        let mut f = BloomFilter::builder()
            .bits(1_000_003)
            .hashes(7)
            .hasher(h)
            .try_build()
            .unwrap();
        f.insert(&key[..]);
        let mut want = INDICES[i].to_vec();
        want.sort_unstable();
        want.dedup();
        assert_eq!(set_bits(f.as_words()), want, "classic bits of {name}");

        // partitioned: slice j gets index (x_j · s) >> 64 of the same sequence
        let s = 1000u64;
        let mut p = PartitionedBloomFilter::builder()
            .bits(7 * s)
            .hashes(7)
            .hasher(h)
            .try_build()
            .unwrap();
        p.insert(&key[..]);
        let hv = h.hash(&key[..]);
        let want: Vec<u64> = hv
            .sequence(7)
            .enumerate()
            .map(|(j, x)| j as u64 * s + ((u128::from(x) * u128::from(s)) >> 64) as u64)
            .collect();
        assert_eq!(set_bits(p.as_words()), want, "partitioned bits of {name}");
    }
}

/// The sectors layout (kind 20) is defined on the pinned hash values: block by multiply-shift
/// of `lo`, then bit `(hi >> 6j) & 63` of word j for j = 0..8.
#[test]
fn blocked_sectors_bits_follow_the_pinned_hashes() {
    for (i, (name, h, key)) in cases().into_iter().enumerate() {
        let mut f = BlockedBloomFilter::builder()
            .bits(16 * 512)
            .layout(BlockLayout::Sectors)
            .hasher(h)
            .try_build()
            .unwrap();
        f.insert(&key[..]);
        let (lo, hi) = HASHES[i];
        let block = ((u128::from(lo) * 16) >> 64) as u64;
        let mut want: Vec<u64> = (0..8u64)
            .map(|j| block * 512 + 64 * j + ((hi >> (6 * j)) & 63))
            .collect();
        want.sort_unstable();
        assert_eq!(set_bits(f.as_words()), want, "sectors bits of {name}");
    }
}

/// The salted layouts on xxh3-64 of the key bytes under the hasher's seed (keyed: the low
/// half of SipHash-1-3-128), the salts of the Parquet specification. Kind 31: the 512-bit
/// block by multiply-shift of that 64-bit value, then in 64-bit word j bit
/// `((h mod 2³²) · salt_j mod 2³²) >> 26`. Kind 32: the 256-bit block by multiply-shift onto
/// twice as many blocks as 512-bit lines, then in 32-bit lane j bit `(… ) >> 27`.
#[test]
fn blocked_salted_bits_follow_xxh3_64() {
    const SALTS: [u64; 8] = [
        0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947,
        0x5c6bfb31,
    ];
    // (layout, blocks in 16 lines, block bits, lane bits, shift to the lane's bit)
    for (layout, blocks, block_bits, lane, shift) in [
        (BlockLayout::Salted, 16u64, 512u64, 64u64, 26u32),
        (BlockLayout::Salted256, 32, 256, 32, 27),
    ] {
        for (i, (name, h, key)) in cases().into_iter().enumerate() {
            let built = BlockedBloomFilter::builder()
                .bits(16 * 512)
                .layout(layout)
                .hasher(h)
                .try_build();
            if h.algorithm() == HashAlgorithm::Xxh64 {
                // Parquet's hash is not one the salted layouts take
                assert!(built.is_err(), "{layout:?} {name}");
                continue;
            }
            let mut f = built.unwrap();
            assert_eq!(f.blocks(), 16, "{layout:?} {name}");
            f.insert(&key[..]);
            let x = match h.algorithm() {
                HashAlgorithm::Xxh3_128 => {
                    assert_eq!(f.hasher().algorithm(), HashAlgorithm::Xxh3_64);
                    assert_eq!(f.hasher().seed(), h.seed());
                    xxhash_rust::xxh3::xxh3_64_with_seed(&key, h.seed() as u64)
                }
                _ => HASHES[i].0,
            };
            assert_eq!(f.hasher().hash(&key[..]).lo, x, "{layout:?} {name}");
            let block = ((u128::from(x) * u128::from(blocks)) >> 64) as u64;
            let mut want: Vec<u64> = (0..8u64)
                .map(|j| {
                    block * block_bits
                        + lane * j
                        + ((((x & 0xFFFF_FFFF) * SALTS[j as usize]) & 0xFFFF_FFFF) >> shift)
                })
                .collect();
            want.sort_unstable();
            assert_eq!(set_bits(f.as_words()), want, "{layout:?} bits of {name}");
        }
    }
}

#[test]
fn blocked_bits_are_pinned() {
    for (i, (name, h, key)) in cases().into_iter().enumerate() {
        let b7 = blocked_bits(h, &key, 7);
        let b16 = blocked_bits(h, &key, 16);
        let mut want7 = BLOCKED_K7[i].to_vec();
        want7.dedup();
        let mut want16 = BLOCKED_K16[i].to_vec();
        want16.dedup();
        assert_eq!(b7, want7, "blocked k=7 bits of {name}");
        assert_eq!(b16, want16, "blocked k=16 bits of {name}");
        // one block: all bits in the same 512-bit block, chosen by multiply-shift of `lo`
        let block = ((u128::from(h.hash(&key[..]).lo) * 16) >> 64) as u64;
        assert!(
            b16.iter().all(|&bit| bit / 512 == block),
            "{name}: one block per key"
        );
    }
}

#[test]
fn split_block_words_are_pinned() {
    for (i, &h) in SPLIT_HASHES.iter().enumerate() {
        assert_eq!(
            split_words(h),
            SPLIT_WORDS[i],
            "split-block words of {h:#x}"
        );
    }
}

/// Blocked counting filter (kind 21), 16 lines: the key's line and its k counter positions,
/// after checking that one insert increments exactly those counters.
fn blocked_counting_cells(h: KeyHasher, key: &[u8], k: u32, width: u32) -> (u64, Vec<u64>) {
    use bloomery::BlockedCountingBloomFilter;
    let cells = bloomery::BlockedCountingBloomFilter::cells_per_line_at(width);
    let mut f = BlockedCountingBloomFilter::builder()
        .counters(16 * cells)
        .hashes(k)
        .counter_width(width)
        .hasher(h)
        .try_build()
        .unwrap();
    f.insert(key);
    let hashed = h.hash(key);
    let line = f.line_of(hashed);
    let pos: Vec<u64> = f.positions(hashed).collect();
    for b in 0..16 {
        for j in 0..cells {
            let want = if b == line {
                pos.iter().filter(|&&p| p == j).count() as u32
            } else {
                0
            };
            assert_eq!(f.counter(b, j), want, "line {b} counter {j}");
        }
    }
    (line, pos)
}

/// The blocked counting mapping: line by multiply-shift of `lo` (as the blocked filter), then
/// the base-B digits of `hi` — 7-bit slices from the top for 4-bit counters (k = 7), and for
/// 3-bit counters (B = 170, 7 digits per word) at k = 16 two refreshed words.
#[test]
fn blocked_counting_cells_are_pinned() {
    for (i, (name, h, key)) in cases().into_iter().enumerate() {
        let (line, pos) = blocked_counting_cells(h, &key, 7, 4);
        let (lo, hi) = HASHES[i];
        assert_eq!(line, ((u128::from(lo) * 16) >> 64) as u64, "{name}");
        let slices: Vec<u64> = (0..7).map(|j| (hi << (7 * j)) >> 57).collect();
        assert_eq!(pos, slices, "4-bit cells of {name}");
        let (want_line, want_pos) = BLOCKED_COUNTING_W4_K7[i];
        assert_eq!((line, pos), (want_line, want_pos.to_vec()), "{name}");
        let (line3, pos3) = blocked_counting_cells(h, &key, 16, 3);
        assert_eq!(line3, line, "{name}");
        assert_eq!(
            pos3,
            BLOCKED_COUNTING_W3_K16[i].to_vec(),
            "3-bit cells of {name}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Golden files of format version 1.
// ---------------------------------------------------------------------------------------------

/// The window golden's shape `(window, k, l, slice bits, generation)`, its point in the stream
/// `(ring position, position in the generation, generations ended)` and how many of
/// [`absent_keys`] it answers true for.
const WINDOW_SHAPE: (u64, u32, u32, u64, u64) = (700, 11, 61, 200, 12);
const WINDOW_POINT: (u32, u64, u64) = (68, 2, 4);
const WINDOW_ABSENT_FOUND: u64 = 0;
/// The same for the blocked layout's golden (slice bits = 64 × blocks).
const WINDOW_BLOCKED_SHAPE: (u64, u32, u32, u64, u64) = (120, 4, 8, 256, 15);
const WINDOW_BLOCKED_POINT: (u32, u64, u64) = (9, 5, 3);
const WINDOW_BLOCKED_ABSENT_FOUND: u64 = 0;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1")
}

fn golden_keys() -> Vec<String> {
    (0..50).map(|i| format!("golden-{i}")).collect()
}

/// What each golden file holds: how to build it (only used to write a missing file) and what
/// loading it must give.
struct Golden {
    file: &'static str,
    kind: Kind,
    build: fn() -> AnyFilter,
    /// (bits, hashes) as `info()` reports them.
    shape: (u64, u32),
    hash: &'static str,
    seed_kind: &'static str,
}

fn goldens() -> Vec<Golden> {
    vec![
        Golden {
            file: "classic.bloom",
            kind: Kind::Classic,
            build: || {
                AnyFilter::Classic(
                    BloomFilter::builder()
                        .bits(1000)
                        .hashes(5)
                        .seed(0x5EED)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (1000, 5),
            hash: "xxh3-128",
            seed_kind: "user",
        },
        Golden {
            file: "partitioned.bloom",
            kind: Kind::Partitioned,
            build: || {
                AnyFilter::Partitioned(
                    PartitionedBloomFilter::builder()
                        .bits(1001)
                        .hashes(7)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (1001, 7),
            hash: "xxh3-128",
            seed_kind: "default",
        },
        Golden {
            file: "blocked.bloom",
            kind: Kind::Blocked,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .capacity(50)
                        .fpr(0.01)
                        .seed(7)
                        // written before the sectors layout existed (kind 20), when sizing
                        // always gave the positions layout
                        .layout(BlockLayout::Positions)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0), // sized: checked against the stored capacity instead
            hash: "xxh3-128",
            seed_kind: "user",
        },
        Golden {
            file: "blocked-sectors.bloom",
            kind: Kind::BlockedSectors,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .capacity(50)
                        .fpr(0.01)
                        .seed(7)
                        .layout(BlockLayout::Sectors)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0),
            hash: "xxh3-128",
            seed_kind: "user",
        },
        // the default layout of a blocked filter sized for 1% since kind 31 exists
        Golden {
            file: "blocked-salted.bloom",
            kind: Kind::BlockedSalted,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .capacity(50)
                        .fpr(0.01)
                        .seed(7)
                        .layout(BlockLayout::Salted)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0),
            hash: "xxh3-64",
            seed_kind: "user",
        },
        Golden {
            file: "blocked-salted-keyed.bloom",
            kind: Kind::BlockedSalted,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .capacity(50)
                        .fpr(0.01)
                        .hasher(KeyHasher::with_secret(
                            0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF,
                        ))
                        .layout(BlockLayout::Salted)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0),
            hash: "siphash13-128",
            seed_kind: "keyed",
        },
        Golden {
            file: "blocked-salted256.bloom",
            kind: Kind::BlockedSalted256,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .capacity(50)
                        .fpr(0.01)
                        .seed(7)
                        .layout(BlockLayout::Salted256)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0),
            hash: "xxh3-64",
            seed_kind: "user",
        },
        Golden {
            file: "blocked-salted256-keyed.bloom",
            kind: Kind::BlockedSalted256,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .capacity(50)
                        .fpr(0.01)
                        .hasher(KeyHasher::with_secret(
                            0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF,
                        ))
                        .layout(BlockLayout::Salted256)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0),
            hash: "siphash13-128",
            seed_kind: "keyed",
        },
        Golden {
            file: "blocked-keyed.bloom",
            kind: Kind::Blocked,
            build: || {
                AnyFilter::Blocked(
                    BlockedBloomFilter::builder()
                        .bits(4 * 512)
                        .hashes(12)
                        .hasher(KeyHasher::with_secret(
                            0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF,
                        ))
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (2048, 12),
            hash: "siphash13-128",
            seed_kind: "keyed",
        },
        Golden {
            file: "split-block.bloom",
            kind: Kind::SplitBlock,
            build: || AnyFilter::SplitBlock(SplitBlockBloomFilter::try_with_bytes(5 * 32).unwrap()),
            shape: (5 * 256, 8),
            hash: "xxh64",
            seed_kind: "default",
        },
        // a sliding window of 700 insertions that has turned its ring (50 keys, several
        // generations ended): ring position and position in the generation are pinned
        Golden {
            file: "window.bloom",
            kind: Kind::Window,
            build: || {
                AnyFilter::Window(
                    // the shape sized for (700, 1%) when the file was written
                    AgePartitionedBloomFilter::builder()
                        .capacity(700)
                        .fpr(0.01)
                        .shape(WINDOW_SHAPE.1, WINDOW_SHAPE.2, WINDOW_SHAPE.3)
                        .seed(0x5EED)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0), // sized: the shape is pinned in the loader's checks below
            hash: "xxh3-128",
            seed_kind: "user",
        },
        // the blocked layout of a window of 120 insertions, 4 blocks of k + l = 12 words, its
        // ring turned three times by the 50 keys
        Golden {
            file: "window-blocked.bloom",
            kind: Kind::WindowBlocked,
            build: || {
                AnyFilter::Window(
                    AgePartitionedBloomFilter::builder()
                        .capacity(WINDOW_BLOCKED_SHAPE.0)
                        .fpr(0.01)
                        .shape(
                            WINDOW_BLOCKED_SHAPE.1,
                            WINDOW_BLOCKED_SHAPE.2,
                            WINDOW_BLOCKED_SHAPE.3,
                        )
                        .layout(WindowLayout::Blocked)
                        .seed(0x5EED)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (12 * 256, 4),
            hash: "xxh3-128",
            seed_kind: "user",
        },
        Golden {
            file: "scalable.bloom",
            kind: Kind::Scalable,
            build: || {
                AnyFilter::Scalable(
                    ScalableBloomFilter::builder()
                        .capacity(8)
                        .fpr(0.02)
                        .seed(3)
                        // written when every scalable file stored its creator's limit
                        // (then the default, 16 GiB); today only a limit given explicitly is
                        .max_bytes(bloomery::tuning::DEFAULT_MAX_BYTES)
                        .try_build()
                        .unwrap(),
                )
            },
            shape: (0, 0), // three or more sub-filters, checked below
            hash: "xxh3-128",
            seed_kind: "user",
        },
    ]
}

fn filled(mut f: AnyFilter) -> AnyFilter {
    for k in golden_keys() {
        f.insert(&k).unwrap();
    }
    f
}

/// Writes golden files that do not exist yet and prints the literal tables. Never deletes or
/// overwrites a file: goldens of a released version must never be regenerated, only added.
#[test]
#[ignore = "writes tests/golden; run by hand to add goldens"]
fn regenerate() {
    std::fs::create_dir_all(golden_dir()).unwrap();
    for g in goldens() {
        let path = golden_dir().join(g.file);
        if path.exists() {
            println!("kept {}", path.display());
            continue;
        }
        filled((g.build)()).save(&path).unwrap();
        println!("wrote {}", path.display());
    }
    for g in typed_goldens() {
        let path = golden_dir().join(g.file);
        if path.exists() {
            println!("kept {}", path.display());
            continue;
        }
        std::fs::write(&path, (g.build)()).unwrap();
        println!("wrote {}", path.display());
    }
    let all = cases();
    println!("const HASHES: [(u64, u64); {}] = [", all.len());
    for (_, h, k) in &all {
        let v = h.hash(&k[..]);
        println!("    ({:#018x}, {:#018x}),", v.lo, v.hi);
    }
    println!("];\nconst INDICES: [[u64; 7]; {}] = [", all.len());
    for (_, h, k) in &all {
        println!(
            "    {:?},",
            h.hash(&k[..]).indices(7, 1_000_003).collect::<Vec<_>>()
        );
    }
    for kk in [7u32, 16] {
        println!("];\nconst BLOCKED_K{kk}: [[u64; {kk}]; {}] = [", all.len());
        for (_, h, k) in &all {
            // pad with repeats of the last bit when probes collide (dedup in the test)
            let mut b = blocked_bits(*h, k, kk);
            while b.len() < kk as usize {
                b.push(*b.last().unwrap());
            }
            println!("    {b:?},");
        }
    }
    println!(
        "];\nconst BLOCKED_COUNTING_W4_K7: [(u64, [u64; 7]); {}] = [",
        all.len()
    );
    for (_, h, k) in &all {
        let (line, pos) = blocked_counting_cells(*h, k, 7, 4);
        println!("    ({line}, {pos:?}),");
    }
    println!(
        "];\nconst BLOCKED_COUNTING_W3_K16: [[u64; 16]; {}] = [",
        all.len()
    );
    for (_, h, k) in &all {
        println!("    {:?},", blocked_counting_cells(*h, k, 16, 3).1);
    }
    println!("];\nconst SPLIT_WORDS: [(u64, [u32; 8]); 4] = [");
    for h in SPLIT_HASHES {
        let (b, w) = split_words(h);
        let w: Vec<String> = w.iter().map(|x| format!("{x:#010x}")).collect();
        println!("    ({b}, [{}]),", w.join(", "));
    }
    println!("];");
}

#[test]
fn golden_files_v1_load_and_reencode_identically() {
    let keys = golden_keys();
    for g in goldens() {
        let path = golden_dir().join(g.file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(bytes.len() <= 8192, "{}: goldens stay small", g.file);
        // the fixed header fields of version 1
        assert_eq!(&bytes[..8], b"BLOOMERY", "{}", g.file);
        assert_eq!(
            u16::from_le_bytes([bytes[8], bytes[9]]),
            1,
            "{}: version",
            g.file
        );
        assert_eq!(
            u16::from_le_bytes([bytes[10], bytes[11]]),
            g.kind.id(),
            "{}: kind",
            g.file
        );
        assert_eq!(
            u64::from_le_bytes(bytes[48..56].try_into().unwrap()),
            50,
            "{}: items",
            g.file
        );

        let f = AnyFilter::from_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", g.file));
        assert_eq!(f.kind(), g.kind, "{}", g.file);
        let read = AnyFilter::read_from(Trickle(&bytes))
            .unwrap_or_else(|e| panic!("{}: read_from: {e}", g.file));
        assert_eq!(read.to_bytes(), bytes, "{}: read_from", g.file);
        for k in &keys {
            assert!(f.contains(k), "{}: golden key {k} missing", g.file);
        }
        let info = f.info();
        assert_eq!(info.items, 50, "{}", g.file);
        assert_eq!(info.format_version, 1);
        assert_eq!(info.hash, g.hash, "{}", g.file);
        assert_eq!(info.seed_kind, g.seed_kind, "{}", g.file);
        if g.shape != (0, 0) {
            assert_eq!((info.bits, info.hashes), g.shape, "{}: shape", g.file);
        }
        assert_eq!(
            f.to_bytes(),
            bytes,
            "{}: re-encoding changed the bytes",
            g.file
        );
        // building the same filter today gives the same bytes: the mapping did not move
        assert_eq!(
            filled((g.build)()).to_bytes(),
            bytes,
            "{}: today's build differs",
            g.file
        );
        // the typed loader and the mmap path agree
        #[cfg(feature = "mmap")]
        {
            let mapped = AnyFilter::open_mmap(&path, bloomery::Verify::Checksum).unwrap();
            assert_eq!(mapped, f, "{}", g.file);
        }

        match &f {
            AnyFilter::Blocked(b)
                if g.file.starts_with("blocked") && g.file != "blocked-keyed.bloom" =>
            {
                assert_eq!(b.capacity(), 50);
                assert_eq!(b.target_fpr(), 0.01);
                let t = BlockedBloomFilter::from_bytes(&bytes).unwrap();
                assert_eq!(&t, b);
            }
            AnyFilter::Scalable(s) => {
                assert!(s.filters().len() >= 3, "8, 16, 32 … keys per sub-filter");
                assert_eq!(s.initial_capacity(), 8);
                assert_eq!(s.target_fpr(), 0.02);
                assert_eq!(ScalableBloomFilter::from_bytes(&bytes).unwrap(), *s);
            }
            AnyFilter::Classic(c) => assert_eq!(BloomFilter::from_bytes(&bytes).unwrap(), *c),
            AnyFilter::Partitioned(p) => {
                assert_eq!(PartitionedBloomFilter::from_bytes(&bytes).unwrap(), *p)
            }
            AnyFilter::SplitBlock(s) => {
                assert_eq!(SplitBlockBloomFilter::from_bytes(&bytes).unwrap(), *s)
            }
            AnyFilter::Window(w) => {
                assert_eq!(AgePartitionedBloomFilter::from_bytes(&bytes).unwrap(), *w);
                let shape = (
                    w.window(),
                    w.hashes(),
                    w.remembering_slices(),
                    w.slice_bits(),
                    w.generation(),
                );
                let point = (
                    w.ring_position(),
                    w.position_in_generation(),
                    w.generations_ended(),
                );
                let fp = absent_keys().iter().filter(|k| w.contains(k)).count();
                if w.layout() == WindowLayout::Blocked {
                    assert_eq!(shape, WINDOW_BLOCKED_SHAPE, "{}", g.file);
                    assert_eq!(point, WINDOW_BLOCKED_POINT, "{}", g.file);
                    assert_eq!(w.blocks(), 4, "{}", g.file);
                    pin(
                        "window-blocked.bloom absent keys found",
                        fp as u64,
                        WINDOW_BLOCKED_ABSENT_FOUND,
                    );
                } else {
                    assert_eq!(shape, WINDOW_SHAPE, "{}", g.file);
                    assert_eq!(point, WINDOW_POINT, "{}", g.file);
                    pin(
                        "window.bloom absent keys found",
                        fp as u64,
                        WINDOW_ABSENT_FOUND,
                    );
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Golden files of format version 1 for the kinds outside `AnyFilter` (6 and up), each loaded
// with its own `Persist` type.
// ---------------------------------------------------------------------------------------------

/// A typed golden: `build` builds and fills the structure and encodes it (only used to write a
/// missing file, and to check today's build gives the same bytes); `check` loads the checked-in
/// bytes and checks shape, answers and re-encoding.
struct TypedGolden {
    file: &'static str,
    kind: Kind,
    build: fn() -> Vec<u8>,
    /// False when the structure makes random choices not derived from the seed, or when the
    /// way it places keys changed after the file was frozen (the format did not), so a
    /// rebuild may legitimately give other bytes.
    deterministic: bool,
    check: fn(&[u8]),
}

/// Multiplicity of golden key `i` in the counting structures: 1, 2 or 3.
fn mult(i: usize) -> u64 {
    i as u64 % 3 + 1
}

/// Keys never inserted into a golden: their answers (false positives, counts) are pinned too.
fn absent_keys() -> Vec<String> {
    (0..200).map(|i| format!("absent-{i}")).collect()
}

/// Pinned answer; `want == u64::MAX` only while adding a golden (prints the value to freeze).
fn pin(label: &str, got: u64, want: u64) {
    if want == u64::MAX {
        eprintln!("PIN {label} = {got}");
        return;
    }
    assert_eq!(got, want, "{label}");
}

/// Loads `bytes` as `T` and checks that encoding it again gives the same bytes.
fn load<T: Persist>(file: &str, bytes: &[u8]) -> T {
    let t = T::from_bytes(bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(t.to_bytes(), bytes, "{file}: re-encoding changed the bytes");
    // read front to back, a few bytes at a time: the same structure
    let read = T::read_from(Trickle(bytes)).unwrap_or_else(|e| panic!("{file}: read_from: {e}"));
    assert_eq!(read.to_bytes(), bytes, "{file}: read_from");
    t
}

/// A reader that hands out at most 7 bytes a call (a stream's reads end anywhere).
struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn typed_goldens() -> Vec<TypedGolden> {
    use bloomery::builders::SpectralMethod;
    use bloomery::{
        AttenuatedBloomFilter, BlockedCountingBloomFilter, BloomierFilter, BreadthBloomFilter,
        CountMinSketch, CountingBloomFilter, CuckooFilter, DLeftCountingBloomFilter,
        DepthBloomFilter, IterativeBloomFilter, MultiLayerBloomFilter, SpaceCodeBloomFilter,
        SpectralBloomFilter, TDigest, TopK, XorFilter,
    };
    vec![
        // The compressed form of a classic filter (flag 1, range-coded payload) and a
        // delta (flag 2) from `classic.bloom` to the same filter with ten more keys.
        TypedGolden {
            file: "classic-compressed.bloom",
            kind: Kind::Classic,
            build: || bloomery::compress::compress_file(&compressed_golden_plain()).unwrap(),
            deterministic: true,
            check: |bytes| {
                use bloomery::compress::{compress_file, decompress_file, is_packed};
                assert!(is_packed(bytes));
                assert_eq!(u16::from_le_bytes([bytes[26], bytes[27]]), 1, "flags");
                let plain = decompress_file(bytes, 1 << 20).unwrap();
                assert_eq!(plain, compressed_golden_plain(), "decompressed bytes moved");
                assert_eq!(compress_file(&plain).unwrap(), bytes, "re-encoding differs");
                let f = BloomFilter::from_bytes(bytes).unwrap();
                assert_eq!((f.bits(), f.hashes()), (20_000, 3));
                for k in golden_keys() {
                    assert!(f.contains(&k), "classic-compressed: {k} missing");
                }
                assert_eq!(AnyFilter::from_bytes(bytes).unwrap(), AnyFilter::Classic(f));
                // 150 of 20 000 bits set: about m·H(p) = 1 286 bits, far below the 2 500 bytes
                assert!(bytes.len() < 512, "{} bytes", bytes.len());
            },
        },
        TypedGolden {
            file: "classic.delta",
            kind: Kind::Classic,
            build: || {
                let base = std::fs::read(golden_dir().join("classic.bloom")).unwrap();
                bloomery::compress::diff_files(&base, &delta_golden_result()).unwrap()
            },
            deterministic: true,
            check: |bytes| {
                use bloomery::compress::{is_delta, patch_file};
                assert!(is_delta(bytes));
                let base = std::fs::read(golden_dir().join("classic.bloom")).unwrap();
                let out = patch_file(&base, bytes, 1 << 20).unwrap();
                assert_eq!(out, delta_golden_result(), "patched bytes moved");
                // any other base is refused
                assert!(patch_file(&out, bytes, 1 << 20).is_err());
                assert!(
                    AnyFilter::from_bytes(bytes).is_err(),
                    "a delta is not a filter"
                );
            },
        },
        TypedGolden {
            file: "counting.bloom",
            kind: Kind::Counting,
            build: || {
                let mut f = CountingBloomFilter::builder()
                    .counters(500)
                    .hashes(4)
                    .counter_width(4)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k);
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: CountingBloomFilter = load("counting.bloom", bytes);
                assert_eq!(f.counter_len(), 500);
                assert_eq!(f.hashes(), 4);
                assert_eq!(f.counter_width(), 4);
                assert_eq!(f.hasher().seed_kind(), SeedKind::User);
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.contains(k), "counting: {k} missing");
                    assert!(f.count(k) >= mult(i), "counting: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin(
                    "counting: count sum",
                    golden_keys().iter().map(c).sum(),
                    105,
                );
                pin(
                    "counting: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    4,
                );
            },
        },
        TypedGolden {
            file: "blocked-counting.bloom",
            kind: Kind::BlockedCounting,
            build: || {
                let mut f = BlockedCountingBloomFilter::builder()
                    .counters(16 * 128)
                    .hashes(4)
                    .counter_width(4)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k);
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: BlockedCountingBloomFilter = load("blocked-counting.bloom", bytes);
                assert_eq!(f.blocks(), 16);
                assert_eq!(f.counter_len(), 16 * 128);
                assert_eq!(f.hashes(), 4);
                assert_eq!(f.counter_width(), 4);
                assert_eq!(f.hasher().seed_kind(), SeedKind::User);
                assert_eq!(f.len(), (0..50).map(mult).sum::<u64>());
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.contains(k), "blocked-counting: {k} missing");
                    assert!(f.count(k) >= mult(i), "blocked-counting: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin(
                    "blocked-counting: count sum",
                    golden_keys().iter().map(c).sum(),
                    99,
                );
                pin(
                    "blocked-counting: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    0,
                );
                pin(
                    "blocked-counting: counter sum",
                    (0..16)
                        .flat_map(|b| (0..128).map(move |j| (b, j)))
                        .map(|(b, j)| u64::from(f.counter(b, j)))
                        .sum(),
                    396,
                );
            },
        },
        TypedGolden {
            file: "count-min32.bloom",
            kind: Kind::CountMin32,
            build: || {
                let mut f = CountMinSketch::builder()
                    .dimensions(63, 3)
                    .seed(0x5EED)
                    .try_build_u32()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    f.insert_many(k, mult(i));
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: bloomery::CountMinSketch32 = load("count-min32.bloom", bytes);
                assert_eq!((f.width(), f.depth()), (63, 3));
                assert_eq!(f.as_words().len(), 95, "two counters a word");
                let want: u64 = (0..50).map(mult).sum();
                assert_eq!(f.total(), want);
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.count(k) >= mult(i), "count-min32: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin(
                    "count-min32: count sum",
                    golden_keys().iter().map(c).sum(),
                    109,
                );
                pin(
                    "count-min32: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    64,
                );
            },
        },
        TypedGolden {
            file: "count-min.bloom",
            kind: Kind::CountMin,
            build: || {
                let mut f = CountMinSketch::builder()
                    .dimensions(64, 3)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    f.insert_many(k, mult(i));
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: CountMinSketch = load("count-min.bloom", bytes);
                assert_eq!((f.width(), f.depth()), (64, 3));
                assert!(!f.is_conservative());
                let want: u64 = (0..50).map(mult).sum();
                assert_eq!(f.total(), want);
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.count(k) >= mult(i), "count-min: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin(
                    "count-min: count sum",
                    golden_keys().iter().map(c).sum(),
                    111,
                );
                pin(
                    "count-min: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    85,
                );
            },
        },
        TypedGolden {
            file: "iterative.bloom",
            kind: Kind::Iterative,
            build: || {
                let mut f = IterativeBloomFilter::builder()
                    .bits(1000)
                    .hashes(5)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k);
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: IterativeBloomFilter = load("iterative.bloom", bytes);
                assert_eq!((f.bits(), f.hashes()), (1000, 5));
                let total: u64 = (0..50).map(mult).sum();
                assert_eq!(f.total_inserts(), total);
                for k in golden_keys() {
                    assert!(f.contains(&k), "iterative: {k} missing");
                }
                let fp = absent_keys().iter().filter(|k| f.contains(*k)).count() as u64;
                pin("iterative: absent members", fp, 0);
                let e: f64 = golden_keys().iter().map(|k| f.estimate(k)).sum();
                pin(
                    "iterative: estimate sum x1000",
                    (e * 1000.0).round() as u64,
                    115814,
                );
            },
        },
        TypedGolden {
            file: "cuckoo.bloom",
            kind: Kind::Cuckoo,
            build: || {
                let mut f = CuckooFilter::builder()
                    .capacity(32)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k).unwrap();
                    }
                }
                f.to_bytes()
            },
            // frozen before inserts looked for a free slot in every sub-table: today's inserts
            // place some fingerprints elsewhere, in the same format
            deterministic: false,
            check: |bytes| {
                let f: CuckooFilter = load("cuckoo.bloom", bytes);
                assert_eq!(f.capacity(), 32);
                assert_eq!(f.bucket_size(), 2);
                assert_eq!(f.max_iterations(), 20);
                assert_eq!(f.expansion(), 1);
                assert!(f.tables().len() >= 2, "100 copies overflow the first table");
                let total: u64 = (0..50).map(mult).sum();
                assert_eq!(f.len(), total);
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.contains(k), "cuckoo: {k} missing");
                    assert!(f.count(k) >= mult(i), "cuckoo: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin("cuckoo: count sum", golden_keys().iter().map(c).sum(), 103);
                pin(
                    "cuckoo: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    6,
                );
            },
        },
        TypedGolden {
            file: "mlbf.bloom",
            kind: Kind::Mlbf,
            build: || {
                let mut f = MultiLayerBloomFilter::builder()
                    .layers(3)
                    .bits(512)
                    .hashes(3)
                    .hasher(KeyHasher::with_seed(0x5EED))
                    .try_build()
                    .unwrap();
                for u in golden_urls() {
                    f.insert(&u).unwrap();
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: MultiLayerBloomFilter = load("mlbf.bloom", bytes);
                assert_eq!((f.layers(), f.bits_per_layer(), f.hashes()), (3, 512, 3));
                assert_eq!(f.len(), 50);
                for u in golden_urls() {
                    assert!(f.contains(&u).unwrap(), "mlbf: {u} missing");
                }
                let fp = (0..200)
                    .filter(|i| {
                        f.contains(&format!("http://host{i}.example/x/y{i}"))
                            .unwrap()
                    })
                    .count() as u64;
                pin("mlbf: absent members", fp, 0);
            },
        },
        TypedGolden {
            file: "xor.bloom",
            kind: Kind::Xor,
            build: || {
                XorFilter::builder()
                    .fingerprint_bits(8)
                    .hasher(KeyHasher::with_seed(0x5EED))
                    .try_build(&golden_keys())
                    .unwrap()
                    .to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: XorFilter = load("xor.bloom", bytes);
                assert_eq!(f.fingerprint_bits(), 8);
                assert_eq!(f.len(), 50);
                for k in golden_keys() {
                    assert!(f.contains(&k), "xor: {k} missing");
                }
                let fp = absent_keys().iter().filter(|k| f.contains(*k)).count() as u64;
                pin("xor: absent members", fp, 1);
            },
        },
        TypedGolden {
            file: "dleft.bloom",
            kind: Kind::DLeftCounting,
            build: || {
                let mut f = DLeftCountingBloomFilter::builder()
                    .capacity(50)
                    .fpr(0.01)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k).unwrap();
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: DLeftCountingBloomFilter = load("dleft.bloom", bytes);
                assert_eq!(
                    f.shape(),
                    bloomery::params::DLeftShape {
                        tables: 4,
                        buckets: 4,
                        cells: 8,
                        remainder_bits: 11,
                        counter_bits: 2,
                    }
                );
                assert_eq!(f.hasher().seed_kind(), SeedKind::User);
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.contains(k), "dleft: {k} missing");
                    assert!(f.count(k) >= mult(i), "dleft: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin("dleft: count sum", golden_keys().iter().map(c).sum(), 99);
                pin(
                    "dleft: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    1,
                );
            },
        },
        TypedGolden {
            file: "spectral-rm.bloom",
            kind: Kind::Spectral,
            build: || {
                let mut f = SpectralBloomFilter::builder()
                    .counters(300)
                    .secondary_counters(100)
                    .hashes(4)
                    .counter_width(8)
                    .method(SpectralMethod::RecurringMinimum)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k);
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: SpectralBloomFilter = load("spectral-rm.bloom", bytes);
                assert_eq!(f.method(), SpectralMethod::RecurringMinimum);
                assert_eq!(f.hashes(), 4);
                assert_eq!(f.counters().len(), 300);
                assert_eq!(f.secondary().map(|c| c.len()), Some(100));
                for (i, k) in golden_keys().iter().enumerate() {
                    assert!(f.contains(k), "spectral: {k} missing");
                    assert!(f.count(k) >= mult(i), "spectral: count of {k}");
                }
                let c = |k: &String| f.count(k);
                pin(
                    "spectral: count sum",
                    golden_keys().iter().map(c).sum(),
                    119,
                );
                pin(
                    "spectral: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    13,
                );
            },
        },
        TypedGolden {
            file: "space-code.bloom",
            kind: Kind::SpaceCode,
            build: || {
                let mut f = SpaceCodeBloomFilter::builder()
                    .bits(1024)
                    .hashes(3)
                    .groups(8)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.insert(k);
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: SpaceCodeBloomFilter = load("space-code.bloom", bytes);
                assert_eq!((f.bits(), f.hashes(), f.groups()), (1024, 3, 8));
                let total: u64 = (0..50).map(mult).sum();
                assert_eq!(f.total_inserts(), total);
                for k in golden_keys() {
                    assert!(f.contains(&k), "space-code: {k} missing");
                }
                let c = |k: &String| f.count(k);
                pin(
                    "space-code: count sum",
                    golden_keys().iter().map(c).sum(),
                    99,
                );
                pin(
                    "space-code: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    19,
                );
            },
        },
        TypedGolden {
            file: "breadth.bloom",
            kind: Kind::Breadth,
            build: || {
                BreadthBloomFilter::builder()
                    .fpr(0.01)
                    .hasher(KeyHasher::with_seed(0x5EED))
                    .try_build(&golden_paths())
                    .unwrap()
                    .to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: BreadthBloomFilter = load("breadth.bloom", bytes);
                assert_eq!(f.levels(), 3);
                for q in [
                    "/lib/shelf1/book1",
                    "shelf2/book5",
                    "/lib//book9",
                    "//shelf0",
                ] {
                    assert!(f.matches(q).unwrap(), "breadth: {q}");
                }
                let fp = (0..50)
                    .filter(|i| {
                        f.matches(&format!("/lib/shelf{}/book{i}", (i + 1) % 3))
                            .unwrap()
                    })
                    .count() as u64;
                pin("breadth: absent paths matched", fp, 10);
            },
        },
        TypedGolden {
            file: "depth.bloom",
            kind: Kind::Depth,
            build: || {
                DepthBloomFilter::builder()
                    .fpr(0.01)
                    .hasher(KeyHasher::with_seed(0x5EED))
                    .try_build(&golden_paths())
                    .unwrap()
                    .to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: DepthBloomFilter = load("depth.bloom", bytes);
                assert_eq!(f.max_path_length(), 2);
                for q in [
                    "/lib/shelf1/book1",
                    "shelf2/book5",
                    "/lib//book9",
                    "//shelf0",
                ] {
                    assert!(f.matches(q).unwrap(), "depth: {q}");
                }
                let fp = (0..50)
                    .filter(|i| {
                        f.matches(&format!("/lib/shelf{}/book{i}", (i + 1) % 3))
                            .unwrap()
                    })
                    .count() as u64;
                pin("depth: absent paths matched", fp, 0);
            },
        },
        TypedGolden {
            file: "attenuated.bloom",
            kind: Kind::Attenuated,
            build: || {
                let mut f = AttenuatedBloomFilter::builder()
                    .depth(3)
                    .capacity(20)
                    .fpr(0.01)
                    .hasher(KeyHasher::with_seed(0x5EED))
                    .try_build()
                    .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    let h = f.hasher().hash(k);
                    f.insert_at_hashed(i % 3, h).unwrap();
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: AttenuatedBloomFilter = load("attenuated.bloom", bytes);
                assert_eq!(f.depth(), 3);
                for (i, k) in golden_keys().iter().enumerate() {
                    let d = f.distance(k).expect("attenuated: key missing");
                    assert!(d <= i % 3, "attenuated: distance of {k}");
                }
                let d: u64 = golden_keys()
                    .iter()
                    .map(|k| f.distance(k).unwrap() as u64)
                    .sum();
                pin("attenuated: distance sum", d, 49);
                let fp = absent_keys().iter().filter_map(|k| f.distance(k)).count() as u64;
                pin("attenuated: absent with a distance", fp, 0);
            },
        },
        TypedGolden {
            file: "bloomier.bloom",
            kind: Kind::Bloomier,
            build: || {
                let pairs: Vec<(String, u64)> = golden_keys()
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| (k, i as u64 * 5 % 256))
                    .collect();
                BloomierFilter::builder()
                    .value_bits(8)
                    .hasher(KeyHasher::with_seed(0x5EED))
                    .try_build(&pairs)
                    .unwrap()
                    .to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: BloomierFilter = load("bloomier.bloom", bytes);
                assert_eq!(f.value_bits(), 8);
                assert_eq!(f.len(), 50);
                for (i, k) in golden_keys().iter().enumerate() {
                    assert_eq!(f.get(k), Some(i as u64 * 5 % 256), "bloomier: value of {k}");
                }
                let got = absent_keys().iter().filter(|k| f.get(*k).is_some()).count() as u64;
                // no fingerprint (the default, 0 bits): every key maps to some value
                pin("bloomier: absent keys with a value", got, 200);
            },
        },
        TypedGolden {
            file: "topk.bloom",
            kind: Kind::TopK,
            build: || {
                let mut f = TopK::builder(5)
                    .width(16)
                    .depth(3)
                    .decay(0.9)
                    .seed(0x5EED)
                    .try_build()
                    .unwrap();
                // Key i arrives i + 1 times (interleaved), so the heaviest keys are known and
                // the narrow rows force decays: the golden pins the decay generator too.
                for round in 0..50 {
                    for (i, k) in golden_keys().iter().enumerate() {
                        if i >= round {
                            f.insert(k);
                        }
                    }
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: TopK = load("topk.bloom", bytes);
                assert_eq!((f.k(), f.width(), f.depth(), f.decay()), (5, 16, 3, 0.9));
                assert_eq!(f.hasher().seed_kind(), SeedKind::User);
                let truth = |k: &[u8]| -> u64 {
                    let s = std::str::from_utf8(k).unwrap();
                    s.trim_start_matches("golden-").parse::<u64>().unwrap() + 1
                };
                assert_eq!(f.total(), (1..=50).sum::<u64>());
                assert_eq!(f.len(), 5);
                for (k, c) in f.list() {
                    assert!(c <= truth(k), "topk: count of {k:?}");
                }
                let listed: Vec<u64> = f.list().iter().map(|(k, _)| truth(k)).collect();
                pin(
                    "topk: true counts of the listed keys, summed",
                    listed.iter().sum(),
                    208,
                );
                pin("topk: decay draws", f.draws(), 2787);
                let c = |k: &String| f.count(k);
                pin("topk: count sum", golden_keys().iter().map(c).sum(), 489);
            },
        },
        // The same stream in a RedisBloom-style list of 6 slots, one left empty: the slots'
        // order (ties among the counts) and the empty slot are pinned.
        TypedGolden {
            file: "topk-slots.bloom",
            kind: Kind::TopKSlots,
            build: || {
                let mut f = TopK::builder(6)
                    .width(16)
                    .depth(3)
                    .decay(0.9)
                    .seed(0x5EED)
                    .redisbloom_list(true)
                    .try_build()
                    .unwrap();
                for round in 0..50 {
                    for (i, k) in golden_keys().iter().enumerate().take(5) {
                        if i >= round {
                            f.insert(k);
                        }
                    }
                }
                f.incr_by(b"golden-zero", 0);
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: TopK = load("topk-slots.bloom", bytes);
                assert!(f.is_redisbloom_list());
                assert_eq!((f.k(), f.width(), f.depth(), f.decay()), (6, 16, 3, 0.9));
                assert_eq!(f.total(), (1..=5).sum::<u64>());
                let listed: Vec<(String, u64)> = f
                    .list()
                    .into_iter()
                    .map(|(k, c)| (String::from_utf8(k.to_vec()).unwrap(), c))
                    .collect();
                let want: Vec<(String, u64)> = (0..5)
                    .rev()
                    .map(|i| (format!("golden-{i}"), i + 1))
                    .collect();
                assert_eq!(listed, want, "five keys, exact counts, largest first");
                // the sixth slot holds an item of estimate 0: in the list, not listed
                assert!(f.contains("golden-zero") && f.len() == 5);
            },
        },
        // A t-digest of compression 20 (130 slots): 1000 values of a fixed sequence, then 7
        // more left in the buffer, so the merged centroids, the buffer and every count are pinned.
        TypedGolden {
            file: "tdigest.bloom",
            kind: Kind::TDigest,
            build: || {
                let mut td = TDigest::try_new(20).unwrap();
                for i in 0..1000u64 {
                    // a fixed permutation of 0..1000, squared: skewed like a latency
                    let x = (i * 389 % 1000) as f64;
                    td.insert(x * x / 1000.0).unwrap();
                }
                td.compress();
                for v in [3.5, -2.0, 999.0, 1e6, 0.0, 0.0, 42.0] {
                    td.insert(v).unwrap();
                }
                td.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let td: TDigest = load("tdigest.bloom", bytes);
                assert_eq!((td.compression(), td.capacity()), (20, 130));
                assert_eq!((td.count(), td.unmerged_nodes()), (1007, 7));
                assert_eq!((td.min(), td.max()), (-2.0, 1e6));
                let merged = td.merged_nodes() as u64;
                pin("tdigest: merged centroids", merged, 12);
                pin("tdigest: compressions", td.compressions(), 9);
                let median = td.quantile(0.5);
                pin(
                    "tdigest: median bits",
                    median.to_bits(),
                    4643211135403693426,
                );
                // the exact median of the 1007 values is 250.0 (x = 500); k₁ at δ = 20 keeps
                // it within a few percent of the ranks
                assert!((td.cdf(250.0) - 0.5).abs() < 0.05, "{}", td.cdf(250.0));
            },
        },
        // RedisBloom's Bloom chain (kind 22): BF.RESERVE k 0.01 16 EXPANSION 2, three links
        TypedGolden {
            file: "redisbloom-bf.bloom",
            kind: Kind::RedisBloomChain,
            build: || {
                let mut f =
                    bloomery::redisbloom::RedisBloomFilter::reserve(16, 0.01, 2, true).unwrap();
                for k in golden_keys() {
                    f.try_insert(k.as_bytes()).unwrap();
                }
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: bloomery::redisbloom::RedisBloomFilter = load("redisbloom-bf.bloom", bytes);
                let links: Vec<(u64, u64, u32)> = f
                    .links()
                    .iter()
                    .map(|l| (l.entries(), l.bits(), l.hashes()))
                    .collect();
                // as RedisBloom 2.6's BF.DEBUG shows them for the same commands
                assert_eq!(links, [(16, 192, 8), (32, 448, 9), (64, 896, 10)]);
                assert_eq!(f.header_chunk().len(), 20 + 3 * 53);
                for k in golden_keys() {
                    assert!(f.contains(k.as_bytes()), "redisbloom-bf: {k} missing");
                }
                pin("redisbloom-bf: items", f.len(), 50);
                let fp = absent_keys()
                    .iter()
                    .filter(|k| f.contains(k.as_bytes()))
                    .count();
                // RedisBloom 2.6 answers BF.MEXISTS with one 1 for these 200 keys
                pin("redisbloom-bf: absent members", fp as u64, 1);
            },
        },
        // RedisBloom's cuckoo filter (kind 23): CF.RESERVE k 16 EXPANSION 2, grown, one delete
        TypedGolden {
            file: "redisbloom-cf.bloom",
            kind: Kind::RedisBloomCuckoo,
            build: || {
                let mut f =
                    bloomery::redisbloom::RedisBloomCuckooFilter::reserve(16, 2, 20, 2, 1 << 20)
                        .unwrap();
                for (i, k) in golden_keys().iter().enumerate() {
                    for _ in 0..mult(i) {
                        f.add(k.as_bytes());
                    }
                }
                assert_eq!(f.remove(b"golden-0"), Ok(()));
                f.to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                let f: bloomery::redisbloom::RedisBloomCuckooFilter =
                    load("redisbloom-cf.bloom", bytes);
                assert_eq!(
                    (f.first_buckets(), f.bucket_size(), f.expansion()),
                    (8, 2, 2)
                );
                let total: u64 = (0..50).map(mult).sum();
                assert_eq!(f.len(), total - 1);
                assert_eq!(f.redisbloom_memory(), 344); // CF.INFO's Size
                                                        // the same commands in RedisBloom 2.6: CF.INFO says 4 filters, CF.COUNT sums
                                                        // to 107 over the golden keys and 9 over the absent ones
                pin("redisbloom-cf: sub-filters", f.filters() as u64, 4);
                // golden-0 (one copy) was deleted
                for k in &golden_keys()[1..] {
                    assert!(f.contains(k.as_bytes()), "redisbloom-cf: {k} missing");
                }
                let c = |k: &String| f.count(k.as_bytes());
                pin(
                    "redisbloom-cf: count sum",
                    golden_keys().iter().map(c).sum(),
                    107,
                );
                pin(
                    "redisbloom-cf: absent count sum",
                    absent_keys().iter().map(c).sum(),
                    9,
                );
            },
        },
        TypedGolden {
            // kind 24: a Parquet file's row-group filters kept beside it (feature `parquet`;
            // the crate's own tests always enable it)
            file: "parquet-sidecar.bloom",
            kind: Kind::ParquetSidecar,
            build: || {
                use bloomery::parquet::{ColumnType, ParquetSidecar, PhysicalType, SidecarFilter};
                let mut a = SplitBlockBloomFilter::try_with_bytes(4 * 32).unwrap();
                for k in golden_keys() {
                    a.insert(&k);
                }
                let mut b = SplitBlockBloomFilter::try_with_bytes(3 * 32).unwrap();
                for i in 0..50i64 {
                    b.insert(&i);
                }
                ParquetSidecar::new(
                    123_456,
                    0x0123_4567_89AB_CDEF,
                    "user.name",
                    ColumnType::new(PhysicalType::ByteArray, 0),
                    vec![
                        Some(SidecarFilter {
                            filter: a,
                            distinct: 50,
                            fpr: 0.01,
                        }),
                        None,
                        Some(SidecarFilter {
                            filter: b,
                            distinct: 50,
                            fpr: 0.02,
                        }),
                    ],
                )
                .unwrap()
                .to_bytes()
            },
            deterministic: true,
            check: |bytes| {
                use bloomery::parquet::{ParquetSidecar, PhysicalType};
                let s = ParquetSidecar::from_bytes(bytes).unwrap();
                assert_eq!(
                    (s.source_len, s.source_footer_hash),
                    (123_456, 0x0123_4567_89AB_CDEF)
                );
                assert_eq!(s.column, "user.name");
                assert_eq!(s.column_type.physical, PhysicalType::ByteArray);
                assert_eq!(s.row_groups.len(), 3);
                assert!(s.row_groups[1].is_none());
                let a = s.row_groups[0].as_ref().unwrap();
                let b = s.row_groups[2].as_ref().unwrap();
                assert_eq!((a.filter.blocks(), a.distinct, a.fpr), (4, 50, 0.01));
                assert_eq!((b.filter.blocks(), b.distinct, b.fpr), (3, 50, 0.02));
                assert_eq!(a.filter.hasher(), &KeyHasher::parquet());
                for k in golden_keys() {
                    assert!(a.filter.contains(&k), "sidecar: {k} missing");
                }
                for i in 0..50i64 {
                    assert!(b.filter.contains(&i), "sidecar: {i} missing");
                }
                pin(
                    "sidecar: absent keys admitted",
                    absent_keys()
                        .iter()
                        .filter(|k| a.filter.contains(*k))
                        .count() as u64,
                    0,
                );
                assert_eq!(
                    s.to_bytes(),
                    bytes,
                    "sidecar: re-encoding changed the bytes"
                );
            },
        },
        // a time window of 100 ticks: keys at times 0..400 in bursts and a gap, so the
        // ring has turned, grown past k slices and retired old ones
        TypedGolden {
            file: "time-window.bloom",
            kind: Kind::TimeWindow,
            build: || time_window_golden().to_bytes(),
            deterministic: true,
            check: |bytes| {
                let f = bloomery::TimeWindowFilter::from_bytes(bytes).unwrap();
                assert_eq!(f, time_window_golden());
                assert_eq!(f.to_bytes(), bytes);
                assert_eq!(
                    (
                        f.window(),
                        f.capacity(),
                        f.hashes(),
                        f.generations_per_window()
                    ),
                    TIME_WINDOW_SHAPE
                );
                assert_eq!(
                    (f.clock(), f.slices() as u64, f.insertions()),
                    TIME_WINDOW_POINT
                );
                // every key of the last 100 ticks is found
                for (i, t) in time_window_keys() {
                    if t + 100 >= f.clock() {
                        assert!(f.contains_at(&i, f.clock()), "{i} of {t}");
                    }
                }
            },
        },
    ]
}

/// The plain file behind `classic-compressed.bloom`: a sparse classic filter.
fn compressed_golden_plain() -> Vec<u8> {
    let mut f = BloomFilter::builder()
        .bits(20_000)
        .hashes(3)
        .seed(0x5EED)
        .try_build()
        .unwrap();
    for k in golden_keys() {
        f.insert(&k);
    }
    f.to_bytes()
}

/// The result of `classic.delta`: the filter of `classic.bloom` with ten more keys.
fn delta_golden_result() -> Vec<u8> {
    let mut f = BloomFilter::builder()
        .bits(1000)
        .hashes(5)
        .seed(0x5EED)
        .try_build()
        .unwrap();
    for k in golden_keys() {
        f.insert(&k);
    }
    for i in 0..10 {
        f.insert(&format!("delta-{i}"));
    }
    f.to_bytes()
}

/// Root-to-leaf paths of a small tree: /lib/shelf{0..3}/book{0..9}.
fn golden_paths() -> Vec<Vec<String>> {
    (0..10)
        .map(|i| {
            vec![
                "lib".to_string(),
                format!("shelf{}", i % 3),
                format!("book{i}"),
            ]
        })
        .collect()
}

/// The time window golden's `(window, capacity, k, l)` and `(clock, slices, insertions)`.
const TIME_WINDOW_SHAPE: (u64, u64, u32, u32) = (100, 60, 9, 18);
const TIME_WINDOW_POINT: (u64, u64, u64) = (418, 25, 260);

/// The time window golden's keys and their times: a trickle, a burst, a gap, a trickle.
fn time_window_keys() -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    for i in 0..80u64 {
        v.push((i, i * 2));
    }
    for i in 80..200u64 {
        v.push((i, 170));
    }
    for i in 200..260u64 {
        v.push((i, 300 + (i - 200) * 2));
    }
    v
}

fn time_window_golden() -> bloomery::TimeWindowFilter {
    let mut f = bloomery::TimeWindowFilter::builder()
        .window(100)
        .capacity(60)
        .fpr(0.01)
        .seed(0x5EED)
        .try_build()
        .unwrap();
    for (i, t) in time_window_keys() {
        f.insert_at(&i, t);
    }
    f
}

fn golden_urls() -> Vec<String> {
    (0..50)
        .map(|i| format!("http://host{}.example/dir{}/page{i}.html", i % 4, i % 7))
        .collect()
}

#[test]
fn typed_golden_files_v1_load_and_reencode_identically() {
    for g in typed_goldens() {
        let path = golden_dir().join(g.file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(bytes.len() <= 8192, "{}: goldens stay small", g.file);
        assert_eq!(&bytes[..8], b"BLOOMERY", "{}", g.file);
        assert_eq!(
            u16::from_le_bytes([bytes[8], bytes[9]]),
            1,
            "{}: version",
            g.file
        );
        assert_eq!(
            u16::from_le_bytes([bytes[10], bytes[11]]),
            g.kind.id(),
            "{}: kind",
            g.file
        );
        (g.check)(&bytes);
        if g.deterministic {
            assert_eq!((g.build)(), bytes, "{}: today's build differs", g.file);
        }
    }
}
