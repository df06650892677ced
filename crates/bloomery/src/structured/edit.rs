//! Strings within edit distance 1 of a key, for approximate membership queries: a key is
//! "near" the set when it or one of its variants may be in the filter.
//!
//! Broder & Mitzenmacher §3.1 (Broder & Mitzenmacher, "Dictionaries"): Manber and Wu extend Spafford's
//! filter of unsuitable passwords "so that passwords that are within edit distance 1 of the
//! dictionary word are also not allowed". The filter stays an ordinary set filter; the query
//! tries every variant ([`edit1_variants`]), so its false-positive rate is about `V·f` for `V`
//! distinct variants tested (`1-(1-f)^V` exactly, for independent variants) — pick `f` with
//! that in mind. Used by `bloomery check --edit-distance 1` and the `dictionaries` experiment.

/// The default alphabet of edits: every printable ASCII byte, space (0x20) to `~` (0x7E).
pub const PRINTABLE_ASCII: &[u8] =
    b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

/// Call `f` with `s` itself and then every string at edit distance 1 from `s` over the byte
/// alphabet `alphabet`, in this order, until `f` returns true (then return true):
///
/// 1. `s` itself;
/// 2. deletions: the byte at position 0, 1, …, len-1 removed;
/// 3. transpositions: positions i and i+1 swapped, i = 0…len-2 (skipped when the two bytes
///    are equal, which would give `s` again);
/// 4. substitutions: position 0…len-1 (outer), each alphabet byte in the given order (inner),
///    skipping the byte already there;
/// 5. insertions: before position 0…len (outer, len = at the end), each alphabet byte (inner).
///
/// Edits work on bytes: a multi-byte UTF-8 character is edited byte by byte. A string may come
/// up more than once (deleting either of two equal neighbours gives the same string). At most
/// `1 + len + (len-1) + len·|A| + (len+1)·|A|` calls; one buffer is reused.
pub fn edit1_variants(s: &[u8], alphabet: &[u8], mut f: impl FnMut(&[u8]) -> bool) -> bool {
    if f(s) {
        return true;
    }
    let n = s.len();
    let mut buf: Vec<u8> = Vec::with_capacity(n + 1);
    for i in 0..n {
        buf.clear();
        buf.extend_from_slice(&s[..i]);
        buf.extend_from_slice(&s[i + 1..]);
        if f(&buf) {
            return true;
        }
    }
    buf.clear();
    buf.extend_from_slice(s);
    for i in 0..n.saturating_sub(1) {
        if s[i] != s[i + 1] {
            buf.swap(i, i + 1);
            let hit = f(&buf);
            buf.swap(i, i + 1);
            if hit {
                return true;
            }
        }
    }
    for i in 0..n {
        for &c in alphabet {
            if c != s[i] {
                buf[i] = c;
                if f(&buf) {
                    return true;
                }
            }
        }
        buf[i] = s[i];
    }
    for i in 0..=n {
        buf.clear();
        buf.extend_from_slice(&s[..i]);
        buf.push(0);
        buf.extend_from_slice(&s[i..]);
        for &c in alphabet {
            buf[i] = c;
            if f(&buf) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn all(s: &[u8], a: &[u8]) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        edit1_variants(s, a, |x| {
            v.push(x.to_vec());
            false
        });
        v
    }

    #[test]
    fn variants_are_exactly_the_edit_distance_one_strings() {
        let a = b"abc";
        let v = all(b"ab", a);
        // 1 + 2 deletions + 1 transposition + 2·2 substitutions + 3·3 insertions
        assert_eq!(v.len(), 1 + 2 + 1 + 4 + 9);
        assert_eq!(v[0], b"ab");
        assert_eq!(&v[1..3], [b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(v[3], b"ba");
        let set: HashSet<Vec<u8>> = v.iter().cloned().collect();
        // brute force: every string over {a,b,c} of length 1..=3 at distance ≤ 1
        let mut want = HashSet::new();
        want.insert(b"ab".to_vec());
        for s in [&b"a"[..], b"b"] {
            want.insert(s.to_vec());
        }
        want.insert(b"ba".to_vec());
        for x in a {
            want.insert(vec![*x, b'b']);
            want.insert(vec![b'a', *x]);
            for i in 0..=2 {
                let mut s = b"ab".to_vec();
                s.insert(i, *x);
                want.insert(s);
            }
        }
        assert_eq!(set, want);
        // empty string: itself and one insertion per byte
        assert_eq!(all(b"", a).len(), 1 + 3);
        // early exit at the first hit, in the documented order
        let mut seen = 0;
        assert!(edit1_variants(b"abc", a, |x| {
            seen += 1;
            x == b"bac"
        }));
        assert_eq!(seen, 1 + 3 + 1);
    }
}
