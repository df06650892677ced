//! [`KeyList`]: the keys of a scan, stored back to back or as a text split as far as read.

use std::sync::{Arc, Mutex, OnceLock};

/// Keys, stored back to back: pushed one by one ([`KeyList::push`], [`KeyList::push_lines`]),
/// or taken over as a text of lines that is split only as far as it is read
/// ([`KeyList::from_lines`]: a prune that needs the first keys only never splits the rest).
///
/// ```
/// use bloomery::parquet::KeyList;
///
/// let mut keys = KeyList::new(false);
/// keys.push(b"7");
/// keys.push_lines(b"8\r\n9\n10".to_vec());
/// assert_eq!(keys.len(), 4);
/// assert_eq!(keys.get(1), b"8"); // the `\r` is not part of the key
/// assert_eq!(keys.get(3), b"10");
/// assert!(!keys.is_raw());
///
/// // a text of lines, split only as far as it is read
/// let lines = KeyList::from_lines(b"a\nb\n".to_vec(), false);
/// assert_eq!(lines.len(), 2);
/// assert_eq!(lines.get(1), b"b");
///
/// ```
#[derive(Debug, Default)]
pub struct KeyList {
    data: Vec<u8>,
    /// The text of lines when it is held elsewhere ([`KeyList::from_shared_lines`]); `data`
    /// is then empty.
    shared: Option<SharedText>,
    starts: Vec<usize>,
    ends: Vec<usize>,
    raw: bool,
    /// `data` is a text of lines, split on demand (`starts`/`ends` stay empty).
    lines: Option<Lines>,
}

/// A text of keys held by its owner and shared, e.g. a key file mapped into memory.
#[derive(Clone)]
struct SharedText(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl std::fmt::Debug for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedText({} bytes)", self.0.as_ref().as_ref().len())
    }
}

/// The on-demand split of a [`KeyList::from_lines`] text.
#[derive(Debug, Default)]
struct Lines {
    /// Number of keys, counted when first asked for.
    count: OnceLock<usize>,
    /// Every key's bounds, made when a key is first asked for by index.
    index: OnceLock<(Vec<usize>, Vec<usize>)>,
    /// The byte offsets where keys 0, step, 2·step, … start, as far as the text was split
    /// (the step, the offsets).
    marks: Mutex<(usize, Vec<usize>)>,
}

impl Clone for KeyList {
    fn clone(&self) -> Self {
        Self {
            data: self.data.clone(),
            shared: self.shared.clone(),
            starts: self.starts.clone(),
            ends: self.ends.clone(),
            raw: self.raw,
            lines: self.lines.as_ref().map(|_| Lines::default()),
        }
    }
}

/// The line of `text` starting at byte `at` (None at the end): its bounds without the `\n`
/// and a `\r` before it, and where the next line starts. A last line without `\n` counts
/// when it is not empty.
#[inline]
fn line_at(text: &[u8], at: usize) -> Option<(usize, usize, usize)> {
    if at >= text.len() {
        return None;
    }
    let (end, next) = match memchr::memchr(b'\n', &text[at..]) {
        Some(p) => (at + p, at + p + 1),
        None => (text.len(), text.len()),
    };
    let end = if end > at && text[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    Some((at, end, next))
}

/// The bounds of the lines of `text[base..]` (as [`line_at`] cuts them), appended.
fn split_lines(text: &[u8], base: usize, starts: &mut Vec<usize>, ends: &mut Vec<usize>) {
    let lines = memchr::memchr_iter(b'\n', &text[base..]).count() + 1;
    starts.reserve(lines);
    ends.reserve(lines);
    let mut at = base;
    while let Some((start, end, next)) = line_at(text, at) {
        starts.push(start);
        ends.push(end);
        at = next;
    }
}

impl KeyList {
    /// An empty list. `raw`: the keys are values' plain encodings already (e.g. decoded from
    /// hex), not text to parse by the column type.
    pub fn new(raw: bool) -> Self {
        Self {
            raw,
            ..Self::default()
        }
    }

    /// The lines of `text` as keys, as [`push_lines`](Self::push_lines) splits them, but
    /// split only as far as they are read: a scan that needs the first keys only (a prune
    /// whose row groups all match early) touches only their bytes. Counting the keys
    /// ([`len`](Self::len)) and indexing them ([`get`](Self::get)) split the whole text once.
    pub fn from_lines(text: Vec<u8>, raw: bool) -> Self {
        Self {
            data: text,
            raw,
            lines: Some(Lines::default()),
            ..Self::default()
        }
    }

    /// As [`from_lines`](Self::from_lines), over a text held elsewhere and shared rather than
    /// copied: e.g. a key file mapped into memory, whose pages are then read only as far as
    /// the scan reads keys.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bloomery::parquet::KeyList;
    ///
    /// let text: Arc<Vec<u8>> = Arc::new(b"alpha\nbeta\r\ngamma".to_vec());
    /// let keys = KeyList::from_shared_lines(text, false);
    /// assert_eq!(keys.len(), 3);
    /// assert_eq!(keys.get(1), b"beta");
    /// ```
    pub fn from_shared_lines(text: Arc<dyn AsRef<[u8]> + Send + Sync>, raw: bool) -> Self {
        Self {
            shared: Some(SharedText(text)),
            raw,
            lines: Some(Lines::default()),
            ..Self::default()
        }
    }

    /// The text of lines, or the pushed keys back to back.
    fn text(&self) -> &[u8] {
        match &self.shared {
            Some(t) => t.0.as_ref().as_ref(),
            None => &self.data,
        }
    }

    /// A list built by [`from_lines`](Self::from_lines) becomes a list of pushed keys.
    fn settle(&mut self) {
        if self.lines.take().is_some() {
            let text = match self.shared.take() {
                Some(t) => t.0.as_ref().as_ref().to_vec(),
                None => std::mem::take(&mut self.data),
            };
            self.push_lines(text);
        }
    }

    /// Append a key.
    pub fn push(&mut self, key: &[u8]) {
        self.settle();
        self.starts.push(self.data.len());
        self.data.extend_from_slice(key);
        self.ends.push(self.data.len());
    }

    /// Append every line of `text` as a key, in order: lines end at `\n` (a `\r` before it is
    /// not part of the key), and a last line without one counts when it is not empty. The
    /// text is kept as it is (taken over without a copy when the list is empty): one pass to
    /// find the line ends, no copy per key.
    pub fn push_lines(&mut self, text: Vec<u8>) {
        self.settle();
        let base = self.data.len();
        if base == 0 {
            self.data = text;
        } else {
            self.data.extend_from_slice(&text);
        }
        split_lines(&self.data, base, &mut self.starts, &mut self.ends);
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.lines {
            None => self.ends.len(),
            Some(l) => *l.count.get_or_init(|| {
                let text = self.text();
                let newlines = memchr::memchr_iter(b'\n', text).count();
                newlines + usize::from(text.last().is_some_and(|&b| b != b'\n'))
            }),
        }
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        match &self.lines {
            None => self.ends.is_empty(),
            Some(_) => self.text().is_empty(),
        }
    }

    /// At least [`len`](Self::len), without counting a text of lines (a key takes at least
    /// one byte of it, its `\n`, but for the last).
    pub fn len_bound(&self) -> usize {
        match &self.lines {
            Some(l) if l.count.get().is_none() => self.text().len(),
            _ => self.len(),
        }
    }

    /// Key `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let (starts, ends) = match &self.lines {
            None => (&self.starts, &self.ends),
            Some(l) => {
                let (s, e) = l.index.get_or_init(|| {
                    let (mut s, mut e) = (Vec::new(), Vec::new());
                    split_lines(self.text(), 0, &mut s, &mut e);
                    (s, e)
                });
                (s, e)
            }
        };
        &self.text()[starts[i]..ends[i]]
    }

    /// Keys `c·step ..` (at most `step` of them) with their indices, in order; how many
    /// there were (None: the list ends before key `c·step`).
    pub(crate) fn for_chunk(
        &self,
        c: usize,
        step: usize,
        mut f: impl FnMut(usize, &[u8]),
    ) -> Option<usize> {
        let first = c.checked_mul(step)?;
        let Some(l) = &self.lines else {
            let end = first.saturating_add(step).min(self.len());
            if first >= end {
                return None;
            }
            (first..end).for_each(|i| f(i, self.get(i)));
            return Some(end - first);
        };
        let text = self.text();
        let start = {
            let mut m = l.marks.lock().unwrap_or_else(|p| p.into_inner());
            if m.0 != step || m.1.is_empty() {
                *m = (step, vec![0]);
            }
            while m.1.len() <= c {
                let mut at = *m.1.last().unwrap_or(&0);
                if at >= text.len() {
                    return None;
                }
                for _ in 0..step {
                    match line_at(text, at) {
                        Some((_, _, next)) => at = next,
                        None => break,
                    }
                }
                m.1.push(at);
            }
            m.1[c]
        };
        let mut at = start;
        let mut n = 0;
        while n < step {
            let Some((s, e, next)) = line_at(text, at) else {
                break;
            };
            f(first + n, &text[s..e]);
            n += 1;
            at = next;
        }
        (n > 0).then_some(n)
    }

    /// Whether the keys are plain encodings rather than text.
    pub fn is_raw(&self) -> bool {
        self.raw
    }
}

#[cfg(test)]
mod tests {
    use super::KeyList;

    fn keys(l: &KeyList) -> Vec<&[u8]> {
        (0..l.len()).map(|i| l.get(i)).collect()
    }

    /// Every key of `l` by chunks of `step`, with its index, as `for_chunk` hands them out.
    fn by_chunks(l: &KeyList, step: usize) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        for c in 0.. {
            let before = out.len();
            let Some(n) = l.for_chunk(c, step, |i, k| out.push((i, k.to_vec()))) else {
                break;
            };
            assert_eq!(out.len() - before, n);
            assert!(n <= step && n > 0);
        }
        out
    }

    /// A text taken over by `from_lines` is the keys `push_lines` makes of it, whether read by
    /// chunks (split as far as read: the chunks before the last never see the end of the
    /// text), counted or indexed, in any order.
    #[test]
    fn lines_split_on_demand_are_the_keys_push_lines_makes() {
        let mut texts: Vec<Vec<u8>> = [
            &b"1\n22\n333\n"[..],
            b"1\r\n22\r\n333",
            b"\n\nx\n",
            b"a\rb\n\r\n",
            b"last\r",
            b"\r",
            b"",
            b"\n",
        ]
        .iter()
        .map(|t| t.to_vec())
        .collect();
        let big: Vec<u8> = (0..1000)
            .flat_map(|i| match i % 7 {
                0 => b"\n".to_vec(),
                1 => format!("{i}\r\n").into_bytes(),
                _ => format!("key-{i}\n").into_bytes(),
            })
            .chain(*b"tail")
            .collect();
        texts.push(big);
        for text in texts {
            let mut eager = KeyList::new(false);
            eager.push_lines(text.clone());
            let want: Vec<(usize, Vec<u8>)> = keys(&eager)
                .into_iter()
                .enumerate()
                .map(|(i, k)| (i, k.to_vec()))
                .collect();
            for step in [1, 2, 3, 64, 1 << 14] {
                // chunks first, then the count and the index
                let lazy = KeyList::from_lines(text.clone(), false);
                assert!(lazy.len_bound() >= want.len());
                assert_eq!(by_chunks(&lazy, step), want, "step {step}");
                assert_eq!(by_chunks(&eager, step), want, "step {step}");
                assert_eq!(lazy.len(), want.len());
                assert_eq!(lazy.is_empty(), want.is_empty());
                assert_eq!(keys(&lazy), keys(&eager));
                // the index and count first, then the chunks; a later chunk before an earlier
                let lazy = KeyList::from_lines(text.clone(), false);
                assert_eq!(keys(&lazy), keys(&eager));
                if want.len() > step {
                    let mut second = Vec::new();
                    lazy.for_chunk(1, step, |i, k| second.push((i, k.to_vec())));
                    assert_eq!(second[..], want[step..want.len().min(2 * step)]);
                }
                assert_eq!(by_chunks(&lazy, step), want, "step {step}");
                // pushing after it keeps every key, in order
                let mut more = KeyList::from_lines(text.clone(), false);
                more.push(b"x");
                let mut also = eager.clone();
                also.push(b"x");
                assert_eq!(keys(&more), keys(&also));
            }
        }
    }

    #[test]
    fn lines_are_the_keys_push_would_make() {
        for (text, want) in [
            (&b"1\n22\n333\n"[..], &[&b"1"[..], b"22", b"333"][..]),
            (b"1\r\n22\r\n333", &[b"1", b"22", b"333"]),
            (b"\n\nx\n", &[b"", b"", b"x"]),
            (b"a\rb\n\r\n", &[b"a\rb", b""]),
            (b"last\r", &[b"last"]),
            (b"\r", &[b""]),
            (b"", &[]),
        ] {
            let mut l = KeyList::new(false);
            l.push_lines(text.to_vec());
            assert_eq!(keys(&l), want, "{:?}", String::from_utf8_lossy(text));
        }
        // appended after pushed keys and other lines, in order
        let mut l = KeyList::new(false);
        l.push(b"k");
        l.push_lines(b"1\n2".to_vec());
        l.push_lines(b"3\n".to_vec());
        l.push(b"");
        assert_eq!(keys(&l), [&b"k"[..], b"1", b"2", b"3", b""]);
    }
}
