//! The multi-layer filter in the file format (kind `mlbf`).

use super::*;

impl Persist for MultiLayerBloomFilter {
    const KIND: Kind = Kind::Mlbf;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Mlbf, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u32(self.layers)
            .u64(self.m)
            .u32(self.k)
            .finish();
        (h, Payload::new(self.arrays.iter().collect()))
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let layers = r.u32()?;
        let m = r.u64()?;
        let k = r.u32()?;
        r.finish()?;
        if layers == 0 || layers > MAX_LAYERS || m == 0 || k == 0 || k > MAX_HASHES {
            return Err(inconsistent(format!("mlbf shape L={layers} m={m} k={k}")));
        }
        let words = usize::try_from(m.div_ceil(64)).map_err(|_| inconsistent("m too large"))?;
        let per = format::padded_len(words);
        let total = per.saturating_mul(u64::from(layers) + 1);
        if total != d.payload_len as u64 {
            return Err(inconsistent(format!(
                "payload is {} bytes, parameters need {total}",
                d.payload_len
            )));
        }
        if src.copies() {
            // a mapped file's layers are its pages, not the heap the limit bounds
            store::check_size(total, limit)?;
        }
        let mut arrays = Vec::with_capacity(layers as usize + 1);
        for i in 0..=layers as usize {
            let w = src.words(d.payload_offset + i * per as usize, words, limit)?;
            if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
                return Err(inconsistent("bits set beyond m"));
            }
            arrays.push(w);
        }
        Ok(Self {
            hasher: d.header.hasher,
            missing: d.header.hasher.hash_bytes(MISSING_SEGMENT),
            layers,
            m,
            k,
            arrays,
            items: d.header.items,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}
