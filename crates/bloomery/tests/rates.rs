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

/// Near misses (each URL plus a unique last segment) of the URLs with at least L segments,
/// whose new segment lands in the last layer: the rate measured, and the number of queries.
fn deep_near_misses(f: &MultiLayerBloomFilter, urls: &[String]) -> (f64, usize) {
    let l = f.layers() as usize;
    let deep: Vec<String> = urls
        .iter()
        .enumerate()
        // `https://` and one slash per path segment: at least L segments
        .filter(|(_, u)| u.matches('/').count() > l)
        .map(|(i, u)| format!("{u}/id{i}x"))
        .collect();
    let hits = deep.iter().filter(|q| f.contains(q).unwrap()).count();
    (hits as f64 / deep.len() as f64, deep.len())
}

fn tol(r: f64, q: usize) -> f64 {
    5.0 * (r * (1.0 - r) / q as f64).sqrt()
}

/// Sized with -n/-p, the MLBF keeps the paper's near-miss queries (an inserted URL with a
/// unique last segment appended: every layer but one truly present) under p on a crawl of
/// many sites, at the memory `params::mlbf_near_miss_shape` gives; the rate lies between the
/// two it reports (URLs sharing none of the query's other segments, and all of them); and
/// recombined and novel URLs fare as its docs say.
#[test]
fn mlbf_near_misses_meet_the_target() {
    let (n, p, l) = (20_000usize, 0.02, 4u32);
    let urls = site_urls(n, 7);
    let mut f = MultiLayerBloomFilter::try_new(l, n as u64, p).unwrap();
    for u in &urls {
        f.insert(u).unwrap();
    }
    assert!(urls.iter().all(|u| f.contains(u).unwrap()));
    let s = params::mlbf_near_miss_shape(n as u64, p, 64).unwrap();
    assert_eq!((f.bits_per_layer(), f.hashes()), (s.m, s.k));
    // every near miss: each URL plus a unique last segment
    let near: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}/id{i}x"))
        .collect();
    let hits = near.iter().filter(|q| f.contains(q).unwrap()).count();
    let got = hits as f64 / near.len() as f64;
    assert!(got <= p + tol(p, near.len()), "near misses: {got} vs {p}");
    // the last layer's: between the rate with nothing shared and the bound
    let (deep, queries) = deep_near_misses(&f, &urls);
    let last = l as usize - 1;
    let (low, high) = (
        f.near_miss_fpr_unshared(last).unwrap(),
        f.near_miss_fpr(last).unwrap(),
    );
    assert!(
        high <= p * 1.02 && (f.current_fpr() - high).abs() < 1e-12,
        "{high}"
    );
    assert!(
        deep >= low - tol(low, queries) && deep <= high + tol(high, queries),
        "deep near misses {deep} outside [{low}, {high}] ({queries} queries)"
    );
    // recombined: the XOR layer alone, near √p at capacity
    let xor = f.recombined_fpr();
    assert!(xor > 0.3 * p.sqrt() && xor < 1.1 * p.sqrt(), "{xor}");
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

/// The worst case of the bound: every URL shares all its other segments with the query
/// (pages of one directory), so the XOR layer can only repeat the last layer's answer at
/// each index. Sized by -n/-p the rate stays under p (and under the bound). With m a power
/// of two the XOR layer's positions are exactly the layer's, XOR-ed with a constant, and
/// the rate is the bound; the independent-tests model is too low.
#[test]
fn mlbf_near_misses_of_one_directory() {
    let (n, p, l) = (30_000usize, 0.02, 4u32);
    let urls: Vec<String> = (0..n)
        .map(|i| format!("https://docs.example.org/api/v2/page{i}.html"))
        .collect();
    let fill = |f: &mut MultiLayerBloomFilter| {
        for u in &urls {
            f.insert(u).unwrap();
        }
    };
    let mut sized = MultiLayerBloomFilter::try_new(l, n as u64, p).unwrap();
    fill(&mut sized);
    let (got, queries) = deep_near_misses(&sized, &urls);
    assert_eq!(queries, n);
    assert!(got <= p + tol(p, n), "{got} vs {p}");
    assert!(got <= sized.current_fpr() + tol(p, n));
    let mut pow2 = MultiLayerBloomFilter::try_with_shape(l, 1 << 17, 5).unwrap();
    fill(&mut pow2);
    let (got, _) = deep_near_misses(&pow2, &urls);
    let bound = pow2.current_fpr();
    let unshared = pow2.near_miss_fpr_unshared(l as usize - 1).unwrap();
    assert!(
        (got - bound).abs() <= tol(bound, n),
        "measured {got} vs bound {bound}"
    );
    assert!(got > unshared + tol(unshared, n), "{unshared} vs {got}");
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
