//! The time window's file form: the shape, the clock and each slice's figures in the
//! parameters, the slices' words (newest first) in the payload.

use std::collections::VecDeque;

use super::slices::{words_for, Slice};
use super::{TimeWindowFilter, MAX_SCALE, MAX_SLICES};
use crate::error::{inconsistent, Result};
use crate::io::format::{
    Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::params::{APBF_MAX_K, APBF_MAX_L};

impl Persist for TimeWindowFilter {
    const KIND: Kind = Kind::TimeWindow;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut w = ParamWriter::new()
            .u64(self.window)
            .u32(self.k)
            .u32(self.l)
            .u64(self.base_bits)
            .u64(self.clock)
            .u64(self.generation_start)
            .u64(self.serial)
            .u64(self.forgotten_early)
            .u32(self.ring.len() as u32);
        for s in &self.ring {
            w = w
                .u8(s.scale)
                .u64(s.serial)
                .u64(s.load)
                .u64(s.generation_count)
                .u64(s.last)
                .u64(s.start);
        }
        let mut h = Header::new(Kind::TimeWindow, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = w.finish();
        (
            h,
            Payload::new(self.ring.iter().map(|s| &s.words).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let window = r.u64()?;
        let k = r.u32()?;
        let l = r.u32()?;
        let base_bits = r.u64()?;
        let clock = r.u64()?;
        let generation_start = r.u64()?;
        let serial = r.u64()?;
        let forgotten_early = r.u64()?;
        let n = r.u32()? as usize;
        let capacity = d.header.capacity;
        if window == 0
            || capacity == 0
            || k == 0
            || k > APBF_MAX_K
            || l == 0
            || l > APBF_MAX_L
            || base_bits == 0
            || base_bits > 1 << 48
        {
            return Err(inconsistent(format!(
                "time window shape window={window} capacity={capacity} k={k} l={l} \
                 m={base_bits}"
            )));
        }
        if n < k as usize || n > MAX_SLICES {
            return Err(inconsistent(format!(
                "{n} slices (k = {k}, at most {MAX_SLICES})"
            )));
        }
        if generation_start > clock {
            return Err(inconsistent("the generation starts after the clock"));
        }
        let t = d.header.target_fpr;
        if !(t == 0.0 || (t > 0.0 && t < 1.0)) {
            return Err(inconsistent(format!("target rate {t}")));
        }
        let base_generation = capacity.div_ceil(u64::from(l));
        let mut metas = Vec::with_capacity(n);
        for _ in 0..n {
            let scale = r.u8()?;
            let slice_serial = r.u64()?;
            let load = r.u64()?;
            let generation_count = r.u64()?;
            let last = r.u64()?;
            let start = r.u64()?;
            if start > clock {
                return Err(inconsistent("a slice's generation begins after the clock"));
            }
            if scale > MAX_SCALE {
                return Err(inconsistent(format!("slice scale {scale}")));
            }
            if load > 0 && last > clock {
                return Err(inconsistent("a slice's last insertion is after the clock"));
            }
            if generation_count > load || generation_count > base_generation << scale {
                return Err(inconsistent(format!(
                    "a slice's generation took {generation_count} insertions (load {load})"
                )));
            }
            metas.push((scale, slice_serial, load, generation_count, last, start));
        }
        r.finish()?;
        // the newest slice's generation is open: it has room left, and began when the
        // filter says it did
        if metas[0].3 >= base_generation << metas[0].0 || metas[0].5 != generation_start {
            return Err(inconsistent("the open generation is full or misdated"));
        }
        let mut sizes = Vec::with_capacity(n);
        let mut total = 0u64;
        for &(scale, ..) in &metas {
            let bits = base_bits << scale;
            let words = words_for(bits).ok_or_else(|| inconsistent("slice too large"))?;
            total = total.saturating_add(crate::io::format::padded_len(words));
            sizes.push((bits, words));
        }
        if d.payload_len as u64 != total {
            return Err(inconsistent(format!(
                "payload is {} bytes, the slices need {total}",
                d.payload_len
            )));
        }
        crate::store::check_size(total, limit)?;
        let mut ring = VecDeque::with_capacity(n);
        let mut at = d.payload_offset;
        for (&(scale, slice_serial, load, generation_count, last, start), &(bits, words)) in
            metas.iter().zip(&sizes)
        {
            let w = src.words(at, words, limit)?;
            if bits % 64 != 0 && w.as_slice()[words - 1] >> (bits % 64) != 0 {
                return Err(inconsistent("bits set beyond a slice's end"));
            }
            at += crate::io::format::padded_len(words) as usize;
            ring.push_back(Slice {
                words: w,
                bits,
                scale,
                serial: slice_serial,
                load,
                generation_count,
                last,
                start,
            });
        }
        Ok(Self {
            hasher: d.header.hasher,
            window,
            capacity,
            target_fpr: t,
            k,
            l,
            base_bits,
            base_generation,
            period: window.div_ceil(u64::from(l)),
            limit,
            clock,
            generation_start,
            items: d.header.items,
            serial,
            forgotten_early,
            ring,
        })
    }
}

impl crate::dispatch::OtherKind for TimeWindowFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        hashed: true,
        ..crate::kind::Capabilities::NONE
    };
}
