//! The multi-layer filter's tests: URL splitting (fast path against the general parser), sizing
//! against near-miss queries, persistence, merges.

use super::*;
use crate::filter::Filter;
use crate::sets::classic::BloomFilter;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn layers(url: &str, l: u32) -> Vec<Option<String>> {
    normalize_url(url, l).unwrap()
}
fn s(v: &[&str]) -> Vec<Option<String>> {
    v.iter()
        .map(|x| if *x == "-" { None } else { Some(x.to_string()) })
        .collect()
}

/// The allocating normaliser of format v1's first release, kept as the oracle the
/// allocation-free one must match exactly (the key → bits mapping of the format).
fn reference_normalize(url: &str, layers: u32) -> Result<Vec<Option<String>>> {
    if layers == 0 || layers > MAX_LAYERS {
        return Err(invalid(
            "layers",
            format!("must be in 1..={MAX_LAYERS}, got {layers}"),
        ));
    }
    let s = url.trim();
    let s = s.split('#').next().unwrap_or("");
    let (s, query) = match s.find('?') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let query = if query == "?" { "" } else { query };
    let (scheme, rest) = split_scheme(s);
    let (auth, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let mut host = auth.to_ascii_lowercase();
    if scheme.is_none() {
        for port in [":80", ":443"] {
            if let Some(h) = host.strip_suffix(port) {
                host.truncate(h.len());
                break;
            }
        }
    }
    if host.is_empty() {
        return Err(invalid("url", format!("no host in {url:?}")));
    }
    let first = match scheme {
        Some(sc) => format!("{}://{host}", sc.to_ascii_lowercase()),
        None => host,
    };
    let mut segs: Vec<std::borrow::Cow<'_, str>> = vec![std::borrow::Cow::Owned(first)];
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        segs.extend(path.split('/').map(std::borrow::Cow::Borrowed));
    }
    if !query.is_empty() {
        let last = segs.pop().unwrap_or_default();
        segs.push(std::borrow::Cow::Owned(format!("{last}{query}")));
    }
    let l = layers as usize;
    let mut out: Vec<Option<String>> = Vec::with_capacity(l);
    if segs.len() > l {
        let tail = segs[l - 1..].join("/");
        out.extend(segs[..l - 1].iter().map(|s| Some(s.to_string())));
        out.push(Some(tail));
    } else {
        out.extend(segs.iter().map(|s| Some(s.to_string())));
        out.resize(l, None);
    }
    Ok(out)
}

fn messy_url() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "",
            " ",
            "http://",
            "HTTPS://",
            "ftp://",
            "Git+SSH://",
            "1x://",
            "://",
        ]),
        "[a-zA-Zé0-9.]{0,6}",
        prop::sample::select(vec!["", ":80", ":443", ":8080", ":"]),
        prop::collection::vec("[A-Za-z0-9_./:-]{0,5}", 0..7),
        prop::sample::select(vec![
            "", "/", "//", "?", "?a=1/B", "/?q", "#f", "?x#y/z", "#", " \n",
        ]),
    )
        .prop_map(|(sc, h, port, p, tail)| {
            let mut u = format!("{sc}{h}{port}");
            for s in p {
                u.push('/');
                u.push_str(&s);
            }
            u.push_str(tail);
            u
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn normaliser_matches_reference(u in messy_url(), l in 1u32..7) {
        let got = normalize_url(&u, l).ok();
        let want = reference_normalize(&u, l).ok();
        prop_assert_eq!(got, want, "{:?} L={}", u, l);
    }
}

/// The layers of the fast path, or `None` where it declines.
fn fast(url: &str, l: u32) -> Option<Vec<Option<Vec<u8>>>> {
    let mut r = [(0, 0); MAX_LAYERS as usize];
    let n = fast_ranges(url.as_bytes(), l as usize, &mut r)?;
    let mut v: Vec<Option<Vec<u8>>> = r[..n]
        .iter()
        .map(|&(a, b)| Some(url.as_bytes()[a as usize..b as usize].to_vec()))
        .collect();
    v.resize(l as usize, None);
    Some(v)
}

fn general(url: &str, l: u32) -> Option<Vec<Option<Vec<u8>>>> {
    let mut v = Vec::new();
    general_layers(url, l, |x| v.push(x.map(<[u8]>::to_vec))).ok()?;
    Some(v)
}

/// URLs the fast path is meant for, and near misses of its conditions.
fn plain_url() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "", "http://", "https://", "HTTPS://", "Http://", "x://",
        ]),
        "[a-z0-9.:-]{0,12}",
        prop::sample::select(vec!["", "", "A", ":80", ":443", ":8080", "0", "3"]),
        prop::collection::vec("[A-Za-z0-9_.~:-]{0,14}", 0..9),
        prop::sample::select(vec!["", "", "", "/", "?q", "#f", " "]),
    )
        .prop_map(|(sc, h, tail_of_host, p, end)| {
            let mut u = format!("{sc}{h}{tail_of_host}");
            for s in p {
                u.push('/');
                u.push_str(&s);
            }
            u.push_str(end);
            u
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn fast_path_matches_general_path(u in plain_url(), l in 1u32..10) {
        if let Some(got) = fast(&u, l) {
            prop_assert_eq!(Some(got), general(&u, l), "{:?} L={}", u, l);
        }
    }
}

#[test]
fn fast_path_takes_common_urls_and_declines_the_rest() {
    for u in [
        "https://github.com/lamansky/2",
        "http://a.com/B/c",
        "a.com//x",
        "a.com:8081/x",
        "git.io",
    ] {
        assert!(fast(u, 4).is_some(), "{u}");
        assert_eq!(fast(u, 4), general(u, 4), "{u}");
    }
    for u in [
        "https://GitHub.com/x",
        "a.com:80/x",
        "https://a.com:443",
        "a.com/x/",
        "a.com/x?q",
        "a.com/x#f",
        " a.com/x",
        "ftp://a.com/x",
        "http:///x",
        "",
    ] {
        assert!(fast(u, 4).is_none(), "{u}");
    }
    // lengths around the 64-byte limit
    for n in 60..70 {
        let u = format!("h.org/{}", "p/".repeat(n).trim_end_matches('/'));
        let u = &u[..n];
        let u = u.trim_end_matches('/');
        assert_eq!(fast(u, 5).is_some(), u.len() <= FAST_MAX, "{u}");
        if fast(u, 5).is_some() {
            assert_eq!(fast(u, 5), general(u, 5), "{u}");
        }
    }
}

#[test]
fn normalisation_cases() {
    assert_eq!(
        layers("http://a.com/b/c/d", 4),
        s(&["a.com", "b", "c", "d"])
    );
    // protocol dropped, http ≡ https, host lower-cased, path case kept
    assert_eq!(
        layers("HTTPS://A.Com/B/c", 4),
        layers("http://a.com/B/c", 4)
    );
    assert_ne!(layers("http://a.com/B", 4), layers("http://a.com/b", 4));
    // fewer segments: explicit missing markers
    assert_eq!(layers("a.com/x", 4), s(&["a.com", "x", "-", "-"]));
    assert_eq!(layers("http://a.com", 3), s(&["a.com", "-", "-"]));
    // more segments: the tail joins the last layer
    assert_eq!(layers("a.com/1/2/3/4/5", 3), s(&["a.com", "1", "2/3/4/5"]));
    // trailing slashes and fragments
    assert_eq!(layers("http://a.com/x/", 3), layers("http://a.com/x", 3));
    assert_eq!(layers("http://a.com/", 3), layers("a.com", 3));
    assert_eq!(layers("a.com/x#frag", 3), layers("a.com/x", 3));
    // query strings stay on the last segment, '/' inside them does not split
    assert_eq!(
        layers("a.com/x/y?q=1/2#f", 4),
        s(&["a.com", "x", "y?q=1/2", "-"])
    );
    assert_eq!(layers("a.com?q", 3), s(&["a.com?q", "-", "-"]));
    assert_eq!(layers("a.com/x?", 3), layers("a.com/x", 3));
    // default ports, other schemes, inner empty segments, whitespace
    assert_eq!(layers("http://a.com:80/x", 3), layers("a.com/x", 3));
    assert_eq!(layers("https://a.com:443/x", 3), layers("a.com/x", 3));
    assert_ne!(layers("a.com:8080/x", 3), layers("a.com/x", 3));
    assert_eq!(layers("FTP://H/x", 2), s(&["ftp://h", "x"]));
    assert_eq!(layers("a.com//x", 3), s(&["a.com", "", "x"]));
    assert_eq!(layers("  a.com/x \n", 3), layers("a.com/x", 3));
    // errors
    assert!(normalize_url("", 3).is_err());
    assert!(normalize_url("http:///x", 3).is_err());
    assert!(normalize_url("   ", 3).is_err());
    assert!(normalize_url("a.com", 0).is_err());
    assert!(normalize_url("a.com", MAX_LAYERS + 1).is_err());
}

#[test]
fn layers_are_classic_filters_and_xor_layer_follows_fig3() {
    let mut f = MultiLayerBloomFilter::try_with_shape(2, 1 << 12, 3).unwrap();
    let mut host = BloomFilter::try_with_shape(1 << 12, 3).unwrap();
    let mut path = BloomFilter::try_with_shape(1 << 12, 3).unwrap();
    for i in 0..50 {
        let (h, p) = (format!("h{i}.org"), format!("p{}", i * 7));
        f.insert(&format!("http://{h}/{p}")).unwrap();
        host.insert(h.as_str());
        path.insert(p.as_str());
    }
    assert_eq!(f.layer_words(0).unwrap(), host.as_words());
    assert_eq!(f.layer_words(1).unwrap(), path.as_words());
    // m is a power of two: the XOR layer is the XOR of the layers' addresses (Fig. 3).
    let mut xor = vec![0u64; (1 << 12) / 64];
    let hs = KeyHasher::new();
    for i in 0..50 {
        let a: Vec<u64> = hs
            .hash(format!("h{i}.org").as_str())
            .indices(3, 1 << 12)
            .collect();
        let b: Vec<u64> = hs
            .hash(format!("p{}", i * 7).as_str())
            .indices(3, 1 << 12)
            .collect();
        for j in 0..3 {
            store::set_bit(&mut xor, a[j] ^ b[j]);
        }
    }
    assert_eq!(f.layer_words(2).unwrap(), &xor[..]);
}

#[test]
fn large_k_takes_the_general_path_with_the_same_bits() {
    // k > SMALL_K: the XOR values live in the 64-entry array; k ≤ 4 are compiled with k
    // a constant; every path gives the same mapping (Fig. 3)
    for k in [1, 2, 3, 4, 5, SMALL_K as u32, SMALL_K as u32 + 1, 12] {
        let mut f = MultiLayerBloomFilter::try_with_shape(2, 1 << 12, k).unwrap();
        let mut host = BloomFilter::try_with_shape(1 << 12, k).unwrap();
        let mut xor = vec![0u64; (1 << 12) / 64];
        let hs = KeyHasher::new();
        for i in 0..40 {
            let (h, p) = (format!("h{i}.org"), format!("p{i}"));
            f.insert(&format!("{h}/{p}")).unwrap();
            host.insert(h.as_str());
            let a: Vec<u64> = hs.hash(h.as_str()).indices(k, 1 << 12).collect();
            let b: Vec<u64> = hs.hash(p.as_str()).indices(k, 1 << 12).collect();
            for j in 0..k as usize {
                store::set_bit(&mut xor, a[j] ^ b[j]);
            }
        }
        assert_eq!(f.layer_words(0).unwrap(), host.as_words(), "k={k}");
        assert_eq!(f.layer_words(2).unwrap(), &xor[..], "k={k}");
        for i in 0..40 {
            assert!(f.contains(&format!("h{i}.org/p{i}")).unwrap());
        }
    }
}

#[test]
fn batch_answers_as_one_by_one() {
    let mut urls: Vec<String> = (0..100)
        .map(|i| format!("https://h{}.org/u{}/r{i}", i % 7, i % 13))
        .collect();
    urls.push(String::new()); // an error in the middle of a group
    urls.extend((0..60).map(|i| format!("H{}.ORG/u{}/r{i}#x", i % 7, i % 13)));
    urls.push("http://".into());
    let mut a = MultiLayerBloomFilter::try_with_shape(4, 1 << 14, 3).unwrap();
    let mut b = a.clone();
    let one: Vec<Option<bool>> = urls.iter().map(|u| a.check_and_insert(u).ok()).collect();
    let many: Vec<Option<bool>> = b
        .check_and_insert_batch(&urls)
        .into_iter()
        .map(|r| r.ok())
        .collect();
    assert_eq!(one, many);
    assert_eq!(a, b);
    assert!(one.iter().filter(|x| **x == Some(true)).count() >= 60);
    // queries: the inserted URLs, fresh ones, and the errors, in and out of groups
    let mut qs = urls.clone();
    qs.extend((0..50).map(|i| format!("h{}.org/u{}/r{i}x", i % 7, i % 13)));
    let one: Vec<Option<bool>> = qs.iter().map(|u| a.contains(u).ok()).collect();
    let many: Vec<Option<bool>> = a.contains_batch(&qs).into_iter().map(|r| r.ok()).collect();
    assert_eq!(one, many);
    let big = MultiLayerBloomFilter::try_with_shape(2, 1 << 10, 12).unwrap();
    let one: Vec<Option<bool>> = qs.iter().map(|u| big.contains(u).ok()).collect();
    let many: Vec<Option<bool>> = big
        .contains_batch(&qs)
        .into_iter()
        .map(|r| r.ok())
        .collect();
    assert_eq!(one, many);
}

#[test]
fn xor_layer_rejects_recombined_segments() {
    // Cen, Xu & Sun §IV.B: a₁/b/…/a_L with b from another URL passes every layer, the XOR layer
    // catches it (with a large filter, certainly).
    let mut f = MultiLayerBloomFilter::try_with_shape(3, 1 << 16, 3).unwrap();
    f.insert("a.com/x/1").unwrap();
    f.insert("b.com/y/2").unwrap();
    let hs = f.hash_url("a.com/y/1").unwrap();
    let mut per_layer = true;
    for (i, h) in hs.iter().enumerate() {
        let w = f.layer_words(i).unwrap();
        per_layer &= h.indices(3, 1 << 16).all(|p| store::get_bit(w, p));
    }
    assert!(per_layer, "every segment is in its layer");
    assert!(!f.contains("a.com/y/1").unwrap());
    assert!(f.contains("https://A.COM/x/1/").unwrap());
}

fn url_strategy() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "http://", "https://", "HTTP://"]),
        "[a-z0-9]{1,8}\\.(com|org)",
        prop::collection::vec("[A-Za-z0-9_.-]{0,6}", 0..7),
        prop::option::of("[a-z=&/]{0,6}"),
    )
        .prop_map(|(sc, h, p, q)| {
            let mut u = format!("{sc}{h}");
            for s in p {
                u.push('/');
                u.push_str(&s);
            }
            if let Some(q) = q {
                u.push('?');
                u.push_str(&q);
            }
            u
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn no_false_negatives(urls in prop::collection::vec(url_strategy(), 1..200), l in 1u32..6) {
        let mut f = MultiLayerBloomFilter::try_new(l, 200, 0.01).unwrap();
        for u in &urls {
            f.insert(u).unwrap();
        }
        for u in &urls {
            prop_assert!(f.contains(u).unwrap());
            let frag = format!("{u}#x");
            prop_assert!(f.contains(&frag).unwrap());
        }
        let g = MultiLayerBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
    }
}

#[test]
fn measured_fpr_matches_eq4() {
    // Every segment distinct and every query segment fresh: each of the L layers passes
    // with probability f and the XOR layer with about f, so the rate is ≈ f^{L+1} ≤ f^L.
    let (l, n, m, k) = (2u32, 3000u64, 12_000u64, 2u32);
    let mut f = MultiLayerBloomFilter::try_with_shape(l, m, k).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..n {
        f.insert(&format!("h{}.com/{}", rng.gen::<u64>(), rng.gen::<u64>()))
            .unwrap();
    }
    let fl = params::fpr_exact(n, m, k);
    let eq4 = params::fpr_mlbf(n, m, k, l);
    assert!((eq4 - fl * fl).abs() < 1e-12);
    assert!(f.model_fpr() <= eq4 && f.len() <= n);
    let q = 40_000u32;
    let mut hits = 0u32;
    for _ in 0..q {
        hits += u32::from(
            f.contains(&format!("h{}.com/{}", rng.gen::<u64>(), rng.gen::<u64>()))
                .unwrap(),
        );
    }
    let rate = f64::from(hits) / f64::from(q);
    let want = fl.powi(l as i32 + 1);
    let sigma = (want * (1.0 - want) / f64::from(q)).sqrt();
    assert!(
        (rate - want).abs() < 4.0 * sigma + 0.002,
        "rate {rate} vs f^(L+1) {want}"
    );
    assert!(rate < eq4, "rate {rate} above eq. 4's f^L = {eq4}");
    // The paper's query set (Cen, Xu & Sun §V): inserted URLs with a unique id appended to the last
    // segment. Only layer L and the XOR layer can reject them.
    let mut fp = 0u32;
    let base: Vec<String> = (0..5000).map(|i| format!("site{i}.com/page")).collect();
    let mut g = MultiLayerBloomFilter::try_with_shape(l, m, k).unwrap();
    for u in base.iter().take(n as usize) {
        g.insert(u).unwrap();
    }
    for (i, u) in base.iter().take(n as usize).enumerate() {
        fp += u32::from(g.contains(&format!("{u}{i}")).unwrap());
    }
    assert!(f64::from(fp) / n as f64 <= fl * 1.5 + 0.01);
}

#[test]
fn paper_numbers() {
    // Cen, Xu & Sun §V: ε = 0.1 per filter, n = 3.5M, eq. (2) gives m = 16,829,152; with k = 3 the
    // exact rate is ≈ 0.1 per layer, so eq. 4 gives ≈ 1e-4 for L = 4.
    let (n, m) = (3_500_000u64, PAPER_BITS);
    let m_eq2 = n as f64 * 0.1f64.ln() / 0.6185f64.ln();
    // 16,773,675 from 0.6185^{m/n} = 0.1: the paper's figure is 0.33 % larger (rounding).
    assert!((m_eq2 - m as f64).abs() / (m as f64) < 5e-3, "{m_eq2}");
    let f = params::fpr_exact(n, m, PAPER_HASHES);
    assert!((f - 0.1).abs() < 0.002, "{f}");
    let eq4 = params::fpr_mlbf(n, m, PAPER_HASHES, PAPER_LAYERS);
    assert!(
        (eq4 - f.powi(4)).abs() < 1e-15 && (eq4 - 1e-4).abs() < 1e-5,
        "{eq4}"
    );
    assert!((params::mlbf_layer_fpr(1e-4, 4) - 0.1).abs() < 1e-12);
}

#[test]
fn sizing_and_paper_shape() {
    let f = MultiLayerBloomFilter::try_new(4, 10_000, 1e-4).unwrap();
    assert!(params::fpr_mlbf(10_000, f.bits_per_layer(), f.hashes(), 4) <= 1e-4);
    // a near miss meets one layer and the XOR layer: the bound at capacity is the target
    let s = params::mlbf_near_miss_shape(10_000, 1e-4, MAX_HASHES).unwrap();
    assert_eq!((f.bits_per_layer(), f.hashes()), (s.m, s.k));
    let p = MultiLayerBloomFilter::paper().unwrap();
    assert_eq!(
        (p.layers(), p.bits_per_layer(), p.hashes()),
        (4, 16_829_152, 3)
    );
    assert_eq!(p.bit_len(), 5 * 16_829_152);
}

#[test]
fn bad_parameters_and_files_are_errors() {
    assert!(MultiLayerBloomFilter::try_new(0, 10, 0.01).is_err());
    assert!(MultiLayerBloomFilter::try_new(MAX_LAYERS + 1, 10, 0.01).is_err());
    assert!(MultiLayerBloomFilter::try_new(3, 0, 0.01).is_err());
    assert!(MultiLayerBloomFilter::try_new(3, 10, 1.0).is_err());
    assert!(MultiLayerBloomFilter::try_with_shape(3, 0, 3).is_err());
    assert!(MultiLayerBloomFilter::try_with_shape(3, 64, 0).is_err());
    assert!(MultiLayerBloomFilter::builder()
        .bits(64)
        .try_build()
        .is_err());
    assert!(MultiLayerBloomFilter::builder()
        .capacity(u64::MAX / 4)
        .fpr(0.01)
        .max_bytes(1 << 20)
        .try_build()
        .is_err());
    let mut f = MultiLayerBloomFilter::try_with_shape(2, 100, 3).unwrap();
    assert!(f.insert("").is_err());
    assert!(f.insert_hashed(&[Hashed::new(1, 2)]).is_err());
    f.insert("a.com/b").unwrap();
    let bytes = f.to_bytes();
    assert_eq!(MultiLayerBloomFilter::from_bytes(&bytes).unwrap(), f);
    assert!(MultiLayerBloomFilter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    assert!(crate::sets::classic::BloomFilter::from_bytes(&bytes).is_err());
    let g = MultiLayerBloomFilter::try_with_shape(3, 100, 3).unwrap();
    assert!(f.clone().union_with(&g).is_err());
    let mut u = MultiLayerBloomFilter::try_with_shape(2, 100, 3).unwrap();
    u.insert("x.org/y").unwrap();
    u.union_with(&f).unwrap();
    assert!(u.contains("a.com/b").unwrap() && u.contains("x.org/y").unwrap());
}
