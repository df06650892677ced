//! Packet flows of a capture file, for the flow-measurement experiments (Broder & Mitzenmacher §8.1, §9).
//!
//! [`read_flows`] parses a classic pcap file (`pcap-parser`) and each Ethernet frame's IPv4 /
//! IPv6 and TCP / UDP headers (`etherparse`), and sums packets and bytes per flow. A flow is
//! the 5-tuple (source and destination address, protocol, source and destination port; ports
//! are 0 for other protocols). Bytes are the frame's length on the wire (the record's original
//! length, not the captured one). Frames without an IP header (ARP, …) are counted but belong
//! to no flow.
//!
//! The real trace is the capture that Debian's `pathspider` package ships as
//! `tests/data/real.pcap`; `scripts/fetch-data.sh pcap` puts it at `$BLOOMERY_DATA/real.pcap`
//! (default `target/data`). Without it, the quick runs fall back to [`synthetic_flows`], a
//! Zipf-sized trace with a fixed seed, and say so in their reports ([`FlowSource`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_parser::{LegacyPcapSlice, PcapBlockOwned};

use crate::measure::Rng;

/// A flow's 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol number (6 TCP, 17 UDP, …).
    pub proto: u8,
    /// Source port (0 when not TCP/UDP).
    pub sport: u16,
    /// Destination port (0 when not TCP/UDP).
    pub dport: u16,
}

impl FlowKey {
    /// The key's bytes as a sketch sees them: addresses (4 or 16 bytes each), protocol,
    /// ports big-endian. Distinct tuples give distinct byte strings.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(37);
        for a in [self.src, self.dst] {
            match a {
                IpAddr::V4(x) => v.extend_from_slice(&x.octets()),
                IpAddr::V6(x) => v.extend_from_slice(&x.octets()),
            }
        }
        v.push(self.proto);
        v.extend_from_slice(&self.sport.to_be_bytes());
        v.extend_from_slice(&self.dport.to_be_bytes());
        v
    }
}

/// One flow's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowTotals {
    /// Packets.
    pub packets: u64,
    /// Bytes on the wire.
    pub bytes: u64,
}

/// A trace: the packets in order (as flow indices and sizes) and the exact per-flow totals.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowTrace {
    /// The flows, in order of first appearance.
    pub flows: Vec<FlowKey>,
    /// Exact totals, parallel to `flows`.
    pub totals: Vec<FlowTotals>,
    /// Every IP packet: (index into `flows`, bytes on the wire), in capture order.
    pub packets: Vec<(u32, u32)>,
    /// Frames in the file that carried no IP header (not in any flow).
    pub non_ip_frames: u64,
}

impl FlowTrace {
    /// Build the totals from a packet sequence.
    fn from_packets(flows: Vec<FlowKey>, packets: Vec<(u32, u32)>, non_ip_frames: u64) -> Self {
        let mut totals = vec![FlowTotals::default(); flows.len()];
        for &(f, b) in &packets {
            let t = &mut totals[f as usize];
            t.packets += 1;
            t.bytes += u64::from(b);
        }
        Self {
            flows,
            totals,
            packets,
            non_ip_frames,
        }
    }

    /// Total bytes of all IP packets.
    pub fn total_bytes(&self) -> u64 {
        self.totals.iter().map(|t| t.bytes).sum()
    }
}

/// Where a trace came from.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowSource {
    /// A capture file.
    Pcap(PathBuf),
    /// [`synthetic_flows`] (the capture was missing in a quick run).
    Synthetic {
        /// The path that was looked for.
        missing: PathBuf,
    },
}

impl FlowSource {
    /// One sentence for a report.
    pub fn describe(&self) -> String {
        match self {
            FlowSource::Pcap(p) => format!(
                "the real capture of Debian's `pathspider` (`tests/data/real.pcap`, read as `{}` \
                 from the data folder `$BLOOMERY_DATA`, default `target/data`)",
                p.file_name().map_or("?".into(), |f| f.to_string_lossy())
            ),
            FlowSource::Synthetic { missing } => format!(
                "**a synthetic Zipf flow trace** (`{}` was not found; run `scripts/fetch-data.sh pcap` \
                 for the real capture)",
                missing.display()
            ),
        }
    }
}

/// The data folder: `$BLOOMERY_DATA`, default `target/data` (relative to the workspace root
/// when run through cargo, else to the current folder).
pub fn data_dir() -> PathBuf {
    match std::env::var_os("BLOOMERY_DATA") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/data");
            if root.is_dir() {
                root
            } else {
                PathBuf::from("target/data")
            }
        }
    }
}

/// The real capture in the data folder.
pub fn real_pcap_path() -> PathBuf {
    data_dir().join("real.pcap")
}

/// Parse a pcap file's bytes into a trace.
pub fn parse_pcap(data: &[u8]) -> anyhow::Result<FlowTrace> {
    let slice = LegacyPcapSlice::from_slice(data)
        .map_err(|e| anyhow::anyhow!("not a classic pcap file: {e:?}"))?;
    if slice.header.is_bigendian() {
        bail!("big-endian pcap files are not supported");
    }
    if slice.header.network.0 != 1 {
        bail!("link type {} is not Ethernet (1)", slice.header.network.0);
    }
    let mut index: HashMap<FlowKey, u32> = HashMap::new();
    let mut flows = Vec::new();
    let mut packets = Vec::new();
    let mut non_ip = 0u64;
    for block in slice {
        let block = block.map_err(|e| anyhow::anyhow!("bad pcap record: {e:?}"))?;
        let PcapBlockOwned::Legacy(b) = block else {
            continue;
        };
        let Some(key) = flow_of(b.data) else {
            non_ip += 1;
            continue;
        };
        let next = u32::try_from(flows.len()).context("too many flows")?;
        let f = *index.entry(key).or_insert_with(|| {
            flows.push(key);
            next
        });
        packets.push((f, b.origlen));
    }
    Ok(FlowTrace::from_packets(flows, packets, non_ip))
}

/// The 5-tuple of an Ethernet frame, if it carries IP.
fn flow_of(frame: &[u8]) -> Option<FlowKey> {
    let p = SlicedPacket::from_ethernet(frame).ok()?;
    let (src, dst, proto) = match p.net? {
        NetSlice::Ipv4(ip) => {
            let h = ip.header();
            (
                IpAddr::V4(h.source_addr()),
                IpAddr::V4(h.destination_addr()),
                h.protocol().0,
            )
        }
        NetSlice::Ipv6(ip) => {
            let h = ip.header();
            (
                IpAddr::V6(h.source_addr()),
                IpAddr::V6(h.destination_addr()),
                ip.payload().ip_number.0,
            )
        }
        NetSlice::Arp(_) => return None,
    };
    let (sport, dport) = match p.transport {
        Some(TransportSlice::Tcp(t)) => (t.source_port(), t.destination_port()),
        Some(TransportSlice::Udp(u)) => (u.source_port(), u.destination_port()),
        _ => (0, 0),
    };
    Some(FlowKey {
        src,
        dst,
        proto,
        sport,
        dport,
    })
}

/// Read and parse a pcap file.
pub fn read_flows(path: &Path) -> anyhow::Result<FlowTrace> {
    let data = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
    parse_pcap(&data).with_context(|| format!("parse {}", path.display()))
}

/// A synthetic trace with a fixed seed: `flows` flows whose packet counts follow a Zipf law
/// of exponent `s` over `packets` packets in random order, packet sizes 64–1500 bytes (large
/// flows mostly full-size), addresses from the 10/8 and 192.168/16 ranges.
pub fn synthetic_flows(flows: u32, packets: u64, s: f64, seed: u64) -> FlowTrace {
    let flows = flows.max(1);
    let mut rng = Rng::new(seed ^ 0xF10);
    let keys: Vec<FlowKey> = (0..flows)
        .map(|i| FlowKey {
            src: IpAddr::V4(std::net::Ipv4Addr::from(0x0A00_0000 | (i & 0x00FF_FFFF))),
            dst: IpAddr::V4(std::net::Ipv4Addr::from(
                0xC0A8_0000 | (rng.below(1 << 16) as u32),
            )),
            proto: if rng.chance(0.8) { 6 } else { 17 },
            sport: 1024 + rng.below(60_000) as u16,
            dport: [80, 443, 53, 22][rng.below(4) as usize],
        })
        .collect();
    let zipf = Zipf::new(u64::from(flows), s);
    let packets = (0..packets)
        .map(|_| {
            let f = zipf.sample(&mut rng) as u32;
            let big = f < flows / 20 + 1;
            let bytes = if big && rng.chance(0.8) {
                1500
            } else {
                64 + rng.below(1437) as u32
            };
            (f, bytes)
        })
        .collect();
    FlowTrace::from_packets(keys, packets, 0)
}

/// The real capture when present; otherwise, when `allow_synthetic`, the synthetic trace, said
/// on stderr for `experiment` (else an error naming the missing file).
pub fn load_or_synthetic(
    experiment: &str,
    allow_synthetic: bool,
    seed: u64,
) -> anyhow::Result<(FlowTrace, FlowSource)> {
    let path = real_pcap_path();
    if path.is_file() {
        return Ok((read_flows(&path)?, FlowSource::Pcap(path)));
    }
    if !allow_synthetic {
        bail!(
            "{} not found: run `scripts/fetch-data.sh pcap` (or set BLOOMERY_DATA)",
            path.display()
        );
    }
    crate::note_generated(experiment, &path, "a synthetic Zipf flow trace", "pcap");
    Ok((
        synthetic_flows(2_000, 20_000, 1.1, seed),
        FlowSource::Synthetic { missing: path },
    ))
}

/// A Zipf distribution over ranks `0..n` (rank r has weight `1/(r+1)^s`), sampled by binary
/// search over the cumulative weights.
#[derive(Debug, Clone)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// The distribution over `n ≥ 1` ranks with exponent `s ≥ 0`.
    pub fn new(n: u64, s: f64) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n.max(1))
            .map(|r| {
                acc += (r as f64).powf(-s);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Self { cdf }
    }

    /// A rank.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-made pcap: header + frames (Ethernet / IPv4 / UDP, and one ARP frame).
    fn tiny_pcap() -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes());
        v.extend_from_slice(&2u16.to_le_bytes());
        v.extend_from_slice(&4u16.to_le_bytes());
        v.extend_from_slice(&[0; 8]);
        v.extend_from_slice(&65535u32.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        let udp = |sport: u16, payload: usize| -> Vec<u8> {
            let mut f = vec![0u8; 12];
            f.extend_from_slice(&[0x08, 0x00]); // IPv4
            let total = (20 + 8 + payload) as u16;
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
            f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
            f.extend_from_slice(&sport.to_be_bytes());
            f.extend_from_slice(&53u16.to_be_bytes());
            f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
            f.extend(std::iter::repeat_n(0xAB, payload));
            f
        };
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        arp.extend(std::iter::repeat_n(0, 20));
        for (frame, orig) in [
            (udp(1000, 10), 100u32),
            (arp, 60),
            (udp(1001, 0), 42),
            (udp(1000, 4), 200),
        ] {
            v.extend_from_slice(&[0; 8]);
            v.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            v.extend_from_slice(&orig.to_le_bytes());
            v.extend_from_slice(&frame);
        }
        v
    }

    #[test]
    fn parses_flows_of_a_tiny_capture() {
        let t = parse_pcap(&tiny_pcap()).unwrap();
        assert_eq!(t.flows.len(), 2);
        assert_eq!(t.non_ip_frames, 1);
        assert_eq!(t.flows[0].sport, 1000);
        assert_eq!(t.flows[0].proto, 17);
        assert_eq!(t.flows[0].dport, 53);
        assert_eq!(
            t.totals[0],
            FlowTotals {
                packets: 2,
                bytes: 300
            }
        );
        assert_eq!(t.totals[1].packets, 1);
        assert_eq!(t.total_bytes(), 342);
        assert_eq!(t.packets, vec![(0, 100), (1, 42), (0, 200)]);
        assert_ne!(t.flows[0].to_bytes(), t.flows[1].to_bytes());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_pcap(b"").is_err());
        assert!(parse_pcap(&[0u8; 64]).is_err());
        let mut cut = tiny_pcap();
        cut.truncate(cut.len() - 5);
        assert!(parse_pcap(&cut).is_err());
    }

    #[test]
    fn synthetic_trace_is_seeded_and_skewed() {
        let a = synthetic_flows(500, 20_000, 1.1, 3);
        assert_eq!(a, synthetic_flows(500, 20_000, 1.1, 3));
        assert_eq!(a.packets.len(), 20_000);
        let top = a.totals[0].packets as f64;
        let tail = a.totals[499].packets as f64;
        // rank 1 against rank 500 of a Zipf(1.1) law: 500^1.1 ≈ 930×
        assert!(top > 100.0 * tail.max(1.0), "{top} {tail}");
    }
}
