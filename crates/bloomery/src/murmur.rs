//! Austin Appleby's MurmurHash2 (32-bit) and MurmurHash64A, the hashes RedisBloom's filters
//! are built on ([`crate::redisbloom`]).
//!
//! Both read the key in little-endian words (RedisBloom runs on little-endian machines, where
//! its native-endian reads are little-endian), so the values are the same on every platform.
//! The key length enters the hash as a 32-bit (`MurmurHash2`) or 64-bit (`MurmurHash64A`)
//! value, as in the reference code; Redis values are at most 512 MiB, far below either limit.

/// MurmurHash64A of `key` under `seed`.
pub(crate) fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// MurmurHash2 (the 32-bit original) of `key` under `seed`.
pub(crate) fn murmur2(key: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h = seed ^ (key.len() as u32);
    let mut words = key.chunks_exact(4);
    for w in &mut words {
        let mut k = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values of RedisBloom 2.6's `MurmurHash64A_Bloom` and `MurmurHash2` (its
    /// `deps/murmur2/MurmurHash2.c`, compiled with gcc on x86-64) for keys of every tail
    /// length: (length, MurmurHash64A seed 0, MurmurHash64A seed 0xc6a4a7935bd1e995,
    /// MurmurHash2 seed 0, MurmurHash2 seed 0x9747b28c). Byte `i` of the key is `37 i + 11`.
    const REFERENCE: [(usize, u64, u64, u32, u32); 18] = [
        (
            0,
            0x0000000000000000,
            0x1ab11ea5a7b2c56e,
            0x00000000,
            0x106e08d9,
        ),
        (
            1,
            0x0d5d347e79e917ea,
            0xbe0d4913f44279cf,
            0xb472a3f5,
            0x14a1b3bb,
        ),
        (
            2,
            0xd21ee89a263f14b8,
            0x22879a093b00b0db,
            0xa885d6ed,
            0x62dde1df,
        ),
        (
            3,
            0xeb79fa711a44bb47,
            0xc468aabd0cfae489,
            0x47ecb7e5,
            0x0111cda7,
        ),
        (
            4,
            0x866263788ab3e2f7,
            0xe9aa56b5eea952a5,
            0x05d5bcfe,
            0x1828af38,
        ),
        (
            5,
            0x5f8d8a456a9c8043,
            0x0ab5b96f34ccb788,
            0xd1acf67b,
            0x4bbdc20b,
        ),
        (
            6,
            0xe7ad9f53809bd8c6,
            0xe7ec0abf848514be,
            0x18e64e31,
            0xbb1299db,
        ),
        (
            7,
            0x83d6d69c8462799c,
            0x43434017cb042d22,
            0xbc435931,
            0x7830e614,
        ),
        (
            8,
            0x30d784eb06d314df,
            0x51c375966f1d31f8,
            0x23779f10,
            0xb4d51caa,
        ),
        (
            9,
            0x5c59b94e255fadda,
            0xc40bdd29ab903561,
            0x0b8d9bb4,
            0xa0a53bf7,
        ),
        (
            10,
            0xdcca98cd23163bb1,
            0xf1d39c889113cd1c,
            0x53e58c78,
            0x769a8b08,
        ),
        (
            11,
            0xfea4bec4a0a2bb73,
            0x7735d97026d0f579,
            0x95d31d3a,
            0x18b27e7e,
        ),
        (
            12,
            0x524b47e3110038a4,
            0x0468a7c67846436c,
            0x10ce8463,
            0x27781138,
        ),
        (
            13,
            0x47a39d60c70099b9,
            0xc6f8d4c26ba65cff,
            0xbf16ba0b,
            0xb8502063,
        ),
        (
            14,
            0xeac2be32e929b548,
            0x8525765fc5ce7288,
            0x980511d7,
            0x94d22dc3,
        ),
        (
            15,
            0xd69656f62c12eb42,
            0x1682ecec173b11b9,
            0x493aa3c7,
            0x79e9d8d1,
        ),
        (
            16,
            0x9f365ec0adfe3bc9,
            0x48c5e8b678cf4339,
            0xc141eac0,
            0xb74cf9f3,
        ),
        (
            17,
            0xeb75eefb93381ce5,
            0x67d5438581477e19,
            0xd27a11a6,
            0x31914ce1,
        ),
    ];

    #[test]
    fn match_redisbloom() {
        let key: Vec<u8> = (0u8..20)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        for (len, a0, a, b0, b) in REFERENCE {
            let k = &key[..len];
            assert_eq!(murmur64a(k, 0), a0, "MurmurHash64A seed 0, length {len}");
            assert_eq!(
                murmur64a(k, 0xc6a4_a793_5bd1_e995),
                a,
                "MurmurHash64A, {len}"
            );
            assert_eq!(murmur2(k, 0), b0, "MurmurHash2 seed 0, length {len}");
            assert_eq!(murmur2(k, 0x9747_b28c), b, "MurmurHash2, length {len}");
        }
    }
}
