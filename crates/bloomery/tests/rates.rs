//! The rate a structure is sized for is the rate it delivers on the queries it promises it
//! for, and the rate it reports from its contents is the rate measured.

use bloomery::{params, MultiLayerBloomFilter, Stats};

/// SplitMix64: a fixed-seed stream for the generators below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
    /// Zipf-like: small values far more often (rank ∝ 1/u).
    fn skewed(&mut self, n: u64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as u64).saturating_sub(1).min(n - 1)
    }
}

/// `n` distinct URLs shaped like a documentation site's crawl: a few hosts (skewed), a
/// directory tree of depth 1 to 5 whose names repeat across hosts and levels (`api`,
/// `guide`, `v2`, ...), and page names that repeat too (`index.html`), so layers hold far
/// fewer distinct values than URLs except the deep ones.
fn site_urls(n: usize, seed: u64) -> Vec<String> {
    const DIRS: [&str; 12] = [
        "docs",
        "api",
        "guide",
        "reference",
        "v1",
        "v2",
        "en",
        "de",
        "blog",
        "src",
        "lib",
        "tutorial",
    ];
    const PAGES: [&str; 6] = [
        "index.html",
        "overview",
        "install",
        "faq.html",
        "changelog",
        "",
    ];
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let host = rng.skewed(200);
        let mut u = format!("https://www.site{host}.example");
        let depth = 1 + rng.below(5);
        for d in 0..depth {
            if rng.below(3) == 0 {
                u.push_str(&format!("/{}", DIRS[rng.below(DIRS.len() as u64) as usize]));
            } else {
                u.push_str(&format!(
                    "/{}{}",
                    ["mod", "pkg", "topic"][d as usize % 3],
                    rng.skewed(3000)
                ));
            }
        }
        let page = PAGES[rng.below(PAGES.len() as u64) as usize];
        if !page.is_empty() {
            u.push('/');
            u.push_str(page);
        }
        if seen.insert(u.clone()) {
            out.push(u);
        }
    }
    out
}

/// Sized with -n/-p, the MLBF keeps the paper's near-miss queries (an inserted URL with a
/// unique last segment appended: every layer but one truly present) at p, at (L+1)·m(n, √p)
/// bits; it reports that rate from its fills; and recombined and novel URLs fare as its
/// docs say.
#[test]
fn mlbf_near_misses_meet_the_target() {
    let (n, p, l) = (20_000usize, 0.02, 4u32);
    let urls = site_urls(n, 7);
    let mut f = MultiLayerBloomFilter::try_new(l, n as u64, p).unwrap();
    for u in &urls {
        f.insert(u).unwrap();
    }
    assert!(urls.iter().all(|u| f.contains(u).unwrap()));
    // the smallest memory for the promise: every array at √p for n values
    let s = params::classic_shape(n as u64, p.sqrt()).unwrap();
    assert_eq!((f.bits_per_layer(), f.hashes()), (s.m, s.k));
    let tol = |r: f64, q: usize| 5.0 * (r * (1.0 - r) / q as f64).sqrt();
    // near misses: each URL plus a unique last segment
    let near: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}/id{i}x"))
        .collect();
    let hits = near.iter().filter(|q| f.contains(q).unwrap()).count();
    let got = hits as f64 / near.len() as f64;
    assert!(got <= p + tol(p, near.len()), "near misses: {got} vs {p}");
    // the worst layer's near misses: URLs of at least L segments gain their new segment in
    // the last layer, which holds about one value per URL
    let deep: Vec<&String> = near
        .iter()
        .filter(|q| q.matches('/').count() >= 2 + l as usize)
        .collect();
    let deep_rate =
        deep.iter().filter(|q| f.contains(q).unwrap()).count() as f64 / deep.len() as f64;
    let reported = f.current_fpr();
    assert!(reported <= p * 1.05, "reported {reported}");
    assert!(
        (deep_rate - reported).abs() <= tol(reported, deep.len()).max(0.25 * reported),
        "deep near misses {deep_rate} vs reported {reported} ({} queries)",
        deep.len()
    );
    assert!(
        (f.near_miss_fpr(l as usize - 1).unwrap() - reported).abs() < 1e-12,
        "{:?}",
        f.layer_fprs()
    );
    // recombined: a known host and directories with another URL's page: the XOR layer alone
    let xor = f.recombined_fpr();
    assert!(xor > 0.5 * p.sqrt() && xor < 1.1 * p.sqrt(), "{xor}");
    // novel: nothing in common with the inserted URLs
    let novel = (0..20_000)
        .filter(|i| {
            f.contains(&format!("https://elsewhere{i}.invalid/a{i}/b{i}/c{i}"))
                .unwrap()
        })
        .count();
    assert!(novel <= 2, "{novel}");
    assert!(f.novel_fpr() < 1e-4);
}

/// An explicit shape is the paper's and is taken as given (no rounding, no re-sizing).
#[test]
fn mlbf_explicit_shape_is_kept() {
    let f = MultiLayerBloomFilter::try_with_shape(4, 16_829_152, 3).unwrap();
    assert_eq!(
        (f.layers(), f.bits_per_layer(), f.hashes()),
        (4, 16_829_152, 3)
    );
}
