//! The blocked filter in the file format (kinds `blocked`, `blocked-sectors`, `blocked-salted`
//! and `blocked-salted256`; `blocks` counts 512-bit lines in every one).

use super::*;

impl Persist for BlockedBloomFilter {
    const KIND: Kind = Kind::Blocked;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let params = ParamWriter::new()
            .u64(self.blocks)
            .u32(self.k)
            .u32(BLOCK_BITS as u32)
            .finish();
        (
            self.core.header(self.layout.kind(), params),
            Payload::new(vec![&self.core.words]),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let blocks = r.u64()?;
        let k = r.u32()?;
        let block_bits = r.u32()?;
        r.finish()?;
        let layout = match d.header.kind {
            Kind::BlockedSectors => BlockLayout::Sectors,
            Kind::BlockedSalted => BlockLayout::Salted,
            Kind::BlockedSalted256 => BlockLayout::Salted256,
            _ => BlockLayout::Positions,
        };
        if blocks == 0
            || k == 0
            || k > BLOCKED_MAX_K
            || u64::from(block_bits) != BLOCK_BITS
            || (layout != BlockLayout::Positions && k != SECTOR_K)
            || (layout == BlockLayout::Salted256 && blocks > SALTED256_MAX_LINES)
        {
            return Err(crate::error::inconsistent(format!(
                "blocked shape blocks={blocks} k={k} block_bits={block_bits} layout={}",
                layout.name()
            )));
        }
        // the salted layout's own limits (at most 2^32 blocks, xxh3-64 or keyed SipHash), as
        // the builder and the shard loader apply them: a forged file beyond them is refused
        // rather than answering at a rate its parameters do not promise
        check_layout_shape(layout, blocks, k, &d.header.hasher)?;
        let words = blocks
            .checked_mul(BLOCK_WORDS as u64)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| crate::error::inconsistent("too many blocks"))?;
        format::check_payload(d, words)?;
        let core = Core::from_header(&d.header, src.words(d.payload_offset, words, limit)?);
        let read = Fused::of(layout, &core.hasher);
        let write = read.for_writes(&core.words);
        Ok(Self {
            core,
            blocks,
            k,
            layout,
            read,
            write,
        })
    }
}
