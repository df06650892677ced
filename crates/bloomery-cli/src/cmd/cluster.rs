//! `bloomery cluster push/check/add/info`: one blocked filter sharded over a Redis/Valkey
//! Cluster running the bloomery module (the layout is the library's `bloomery::shard`).
//!
//! `push` splits a blocked filter file into its shards and loads each through the module's
//! `BF.LOADCHUNK` (the shard's file-format bytes, a header chunk then 4 MiB chunks gathered
//! from the mapped file as they are sent, pipelined; every node at once, on a connection of
//! its own),
//! under key names of a new generation; only when every shard is loaded and checked does it
//! replace the descriptor at NAME (one `SET`), then it deletes the previous generation's
//! shards. `check`/`add` read the descriptor, check every shard's header against it, and send
//! each batch of keys as one `BF.MEXISTS`/`BF.MADD` per shard, pipelined over the nodes.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use bloomery::shard::{key_slot, Layout};
use bloomery::{AnyFilter, Filter};

use redis::cluster::{cluster_pipe, ClusterClient, ClusterConnection};
use redis::Value;

use super::open::open_set;
use crate::cli::{
    ClusterAddArgs, ClusterCheckArgs, ClusterCommand, ClusterInfoArgs, Nodes, PushArgs,
};
use crate::input::{self, KeySpec};
use crate::num::{bytes, count, group, rate, target};
use crate::output::{note, Progress};

/// Keys sent per round of pipelined commands.
const BATCH: usize = 16 * 1024;
/// Largest LOADCHUNK data chunk (the module's SCANDUMP chunk).
const CHUNK: usize = 4 << 20;
/// LOADCHUNK commands per pipeline round (at most this many chunks in flight).
const PIPELINE: usize = 8;

pub fn run(c: ClusterCommand) -> Result<u8> {
    match c {
        ClusterCommand::Push(a) => push(a),
        ClusterCommand::Check(a) => check(a),
        ClusterCommand::Add(a) => add(a),
        ClusterCommand::Info(a) => info(a),
    }
}

fn connect(n: &Nodes) -> Result<ClusterConnection> {
    let urls: Vec<String> = n
        .nodes
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.contains("://") {
                s.to_string()
            } else {
                format!("redis://{s}")
            }
        })
        .collect();
    if urls.is_empty() {
        bail!("--nodes names no node");
    }
    let client = ClusterClient::new(urls.clone())
        .with_context(|| format!("bad --nodes {}", n.nodes.join(",")))?;
    client
        .get_connection()
        .with_context(|| format!("cannot connect to the cluster at {}", n.nodes.join(",")))
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The descriptor at `name`, `None` when the key does not exist.
fn descriptor(con: &mut ClusterConnection, name: &str) -> Result<Option<Layout>> {
    let v: Option<Vec<u8>> =
        redis::cmd("GET")
            .arg(name)
            .query(con)
            .map_err(|e| match e.kind() {
                redis::ErrorKind::TypeError => {
                    anyhow!("`{name}` exists and is not a sharded filter's descriptor ({e})")
                }
                _ => anyhow!(e).context(format!("cannot read `{name}`")),
            })?;
    v.map(|b| {
        Layout::from_bytes(&b)
            .map_err(|e| anyhow!("`{name}` is not a valid sharded filter's descriptor: {e}"))
    })
    .transpose()
}

fn open_layout(con: &mut ClusterConnection, name: &str) -> Result<Layout> {
    descriptor(con, name)?.ok_or_else(|| anyhow!("no sharded filter named `{name}` (no key)"))
}

/// Check every shard's header against the layout (one `BF.SCANDUMP key 0` each, pipelined):
/// a missing, mistyped or mismatched shard is an error naming it. Returns each shard's
/// (items, bytes).
fn check_shards(
    con: &mut ClusterConnection,
    name: &str,
    layout: &Layout,
) -> Result<Vec<(u64, u64)>> {
    let keys = layout.shard_keys(name.as_bytes());
    let mut out = Vec::with_capacity(keys.len());
    for part in keys.chunks(256) {
        let mut p = cluster_pipe();
        for k in part {
            p.cmd("EXISTS").arg(k);
        }
        let exists: Vec<i64> = p.query(con).context("cannot reach the cluster")?;
        for (i, (k, &e)) in part.iter().zip(&exists).enumerate() {
            if e == 0 {
                bail!(
                    "shard {} of `{name}` (key `{}`) is missing",
                    out.len() + i,
                    show(k)
                );
            }
        }
        for k in part {
            let s = out.len();
            let reply: (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
                .arg(k)
                .arg(0)
                .query(con)
                .with_context(|| format!("shard {s} of `{name}` (key `{}`)", show(k)))?;
            let head = layout.check_shard_header(&reply.1).map_err(|e| {
                anyhow!(
                    "shard {s} of `{name}` (key `{}`) does not match the descriptor: {e}",
                    show(k)
                )
            })?;
            out.push((head.items, head.len));
        }
    }
    Ok(out)
}

fn delete_keys(con: &mut ClusterConnection, keys: &[Vec<u8>]) -> Result<()> {
    for part in keys.chunks(256) {
        let mut p = cluster_pipe();
        for k in part {
            p.cmd("DEL").arg(k);
        }
        let _: Vec<i64> = p.query(con)?;
    }
    Ok(())
}

fn push(a: PushArgs) -> Result<u8> {
    let start = Instant::now();
    if a.keys {
        return push_keys(a, start);
    }
    let [file] = a.inputs.as_slice() else {
        bail!("`cluster push` takes one filter file (or key files with --keys)");
    };
    let file = PathBuf::from(file);
    let f = open_set(&file, a.verify.verify())?;
    let AnyFilter::Blocked(b) = &f else {
        bail!(
            "`{}` is a {} filter; `cluster push` needs a blocked filter (kind `blocked`, \
             `blocked-sectors` or `blocked-salted`, the filters the module's BF values hold)",
            file.display(),
            f.kind().name()
        );
    };
    let layout = Layout::of_filter(b, a.shards)
        .with_context(|| format!("cannot shard `{}`", file.display()))?;
    // the item count apportioned once (one pass over the file), not once per shard
    let items = layout.apportion(b)?;
    // every shard is streamed from the file's words (no shard is held in memory), so all
    // are handed to their nodes' threads at once
    load_all(
        &a,
        layout,
        layout.shards(),
        true,
        &std::cell::Cell::new(b.len()),
        start,
        |layout, r| {
            r.map(|s| {
                Ok(Shard::Cut(Box::new(layout.shard_stream(
                    b,
                    s,
                    items[s as usize],
                )?)))
            })
            .collect()
        },
    )
}

/// A shard on its way to its node: cut from a file (its blocks gathered from the file's words
/// a chunk at a time, no copy of the shard held) or built from keys.
enum Shard<'a> {
    Cut(Box<bloomery::shard::ShardStream<'a>>),
    Built {
        filter: bloomery::ScalableBloomFilter,
        at: u64,
    },
}

impl Shard<'_> {
    /// Append the shard's next `BF.LOADCHUNK` chunk to `out` (the header alone first, then at
    /// most [`CHUNK`] bytes) and return the iterator after it; `None` once all are out.
    fn next_chunk(&mut self, out: &mut Vec<u8>) -> Option<u64> {
        match self {
            Shard::Cut(s) => s.next_chunk(CHUNK, out),
            Shard::Built { filter, at } => {
                let len = if *at == 0 {
                    bloomery::file::encoded_header_len(filter)
                } else {
                    CHUNK
                };
                let before = out.len();
                bloomery::file::encoded_range(filter, *at, len, out);
                if out.len() == before {
                    return None;
                }
                *at += (out.len() - before) as u64;
                Some(*at)
            }
        }
    }
}

/// `push --keys`: the shards built from the input lines a group at a time, each group as
/// many shards as fit in the memory limit (`--max-memory`): the first group while the input
/// is read, the others from the keys' hashes spilled to one temporary file per group (16
/// bytes a key), each group built, loaded and dropped before the next.
fn push_keys(a: PushArgs, start: Instant) -> Result<u8> {
    let spec = KeySpec::new(&a.key_args)?;
    let (n, p) = (a.capacity.unwrap_or(0), a.fpr.unwrap_or(0.0));
    let hasher = a
        .seed
        .map_or_else(bloomery::KeyHasher::new, bloomery::KeyHasher::with_seed);
    // the layout `bloomery create -n N -p P` gives (the salted layout at most rates)
    let layout = Layout::default_for_capacity(n, p, a.shards, hasher)?;
    let per_group = u32::try_from(bloomery::tuning::max_bytes() / layout.shard_bytes().max(1))
        .unwrap_or(u32::MAX)
        .clamp(1, layout.shards());
    let group_of = |s: u32| s / per_group;
    let groups = layout.shards().div_ceil(per_group);
    let range = |g: u32| g * per_group..((g + 1) * per_group).min(layout.shards());
    let mut first = layout.range_builder(range(0)).with_context(|| {
        format!(
            "a shard of {} does not fit in memory (--max-memory): push more shards",
            bytes(layout.shard_bytes())
        )
    })?;
    let dir = if groups > 1 {
        Some(tempfile::tempdir().context("cannot make a temporary directory for the keys")?)
    } else {
        None
    };
    let mut spills = Vec::new();
    if let Some(dir) = &dir {
        for g in 1..groups {
            let path = dir.path().join(format!("group-{g}"));
            let f = std::fs::File::create(&path)
                .with_context(|| format!("cannot create `{}`", path.display()))?;
            spills.push((path, BufWriter::new(f)));
        }
    }
    let mut items = 0u64;
    let counts = input::for_each_line(&a.inputs, &spec, |_, key| {
        if let Some(k) = key {
            let h = layout.hasher().hash_bytes(k);
            let g = group_of(layout.shard_of_hash(h));
            if g == 0 {
                items += u64::from(first.insert_hashed(h));
            } else {
                let w = &mut spills[g as usize - 1].1;
                w.write_all(&h.lo.to_le_bytes())?;
                w.write_all(&h.hi.to_le_bytes())?;
            }
        }
        Ok(())
    })?;
    let mut paths = Vec::new();
    for (path, w) in spills {
        w.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all().map(|()| f))
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        paths.push(path);
    }
    // the later groups' shards are counted when they are built: their items are not known
    // yet, so the total is reported after the load
    note(&format!(
        "{} read into {} shards ({} at a time)",
        count(counts.lines, "line", "lines"),
        layout.shards(),
        per_group
    ));
    let mut first = Some(first);
    let built = std::cell::Cell::new(items);
    load_all(&a, layout, per_group, false, &built, start, |layout, r| {
        let g = group_of(r.start);
        if g == 0 {
            first
                .take()
                .map(|b| built_shards(b.finish()))
                .ok_or_else(|| anyhow!("shard group 0 built twice"))
        } else {
            let path = &paths[g as usize - 1];
            let mut b = layout.range_builder(range(g))?;
            let mut r = std::io::BufReader::new(
                std::fs::File::open(path)
                    .with_context(|| format!("cannot read `{}`", path.display()))?,
            );
            let mut buf = [0u8; 16];
            let mut added = 0u64;
            loop {
                match std::io::Read::read_exact(&mut r, &mut buf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                    Err(e) => {
                        return Err(anyhow::Error::from(e)
                            .context(format!("cannot read `{}`", path.display())))
                    }
                }
                let lo = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
                let hi = u64::from_le_bytes(buf[8..].try_into().expect("8 bytes"));
                added += u64::from(b.insert_hashed(bloomery::Hashed::new(lo, hi)));
            }
            let _ = std::fs::remove_file(path);
            built.set(built.get() + added);
            Ok(built_shards(b.finish()))
        }
    })
}

/// Shards built from keys, to load.
fn built_shards(shards: Vec<bloomery::ScalableBloomFilter>) -> Vec<Shard<'static>> {
    shards
        .into_iter()
        .map(|filter| Shard::Built { filter, at: 0 })
        .collect()
}

/// Load every shard of `layout` under a new generation, then switch the descriptor and
/// delete the previous generation. The shards are made `per_group` at a time by
/// `make(layout, range)` (each shard dropped once loaded; with `overlap` the next group is
/// made while the previous one loads) and sent to their nodes at once, one connection and
/// thread per node (the primary serving the shard's slot), each node's shards one after
/// another.
fn load_all<'a>(
    a: &PushArgs,
    layout: Layout,
    per_group: u32,
    overlap: bool,
    items: &std::cell::Cell<u64>,
    start: Instant,
    mut make: impl FnMut(&Layout, std::ops::Range<u32>) -> Result<Vec<Shard<'a>>>,
) -> Result<u8> {
    let mut con = connect(&a.nodes)?;
    let old = descriptor(&mut con, &a.name)?;
    let generation = old.map_or(1, |o| o.generation().wrapping_add(1));
    let layout = layout.with_generation(generation);
    let keys = layout.shard_keys(a.name.as_bytes());
    // leftovers of an interrupted push of this generation
    delete_keys(&mut con, &keys)?;
    // each shard's node (the primary serving its key's slot), one connection each
    let owners = slot_owners(&mut con)?;
    let mut nodes: Vec<String> = owners.iter().map(|o| o.2.clone()).collect();
    nodes.sort();
    nodes.dedup();
    let mut lane = Vec::with_capacity(layout.shards() as usize);
    for s in 0..layout.shards() {
        let slot = layout.shard_slot(a.name.as_bytes(), s);
        let node = owners
            .iter()
            .find(|o| (o.0..=o.1).contains(&slot))
            .and_then(|o| nodes.iter().position(|n| *n == o.2))
            .ok_or_else(|| {
                anyhow!(
                    "no node serves slot {slot} (shard {s}, key `{}`): is the cluster's state ok?",
                    show(&keys[s as usize])
                )
            })?;
        lane.push(node);
    }
    let mut cons = Vec::new();
    for node in &nodes {
        cons.push((node_connection(&a.nodes, node)?, Vec::new(), Vec::new()));
    }
    let total: u64 = layout.shard_bytes() * u64::from(layout.shards());
    let progress = Progress::bytes("pushing", total);
    let per_group = per_group.clamp(1, layout.shards());
    let mut making = std::time::Duration::ZERO;
    let failed = std::sync::atomic::AtomicBool::new(false);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<Result<u64>>();
    let outcome: Result<u64> = std::thread::scope(|scope| {
        // one thread per node, loading the shards it is handed one after another
        let mut lanes = Vec::new();
        for (con, bytes, packed) in cons.iter_mut() {
            let (tx, rx) = std::sync::mpsc::channel::<(u32, Shard<'a>)>();
            lanes.push(tx);
            let (done, keys, progress, failed) = (done_tx.clone(), &keys, &progress, &failed);
            scope.spawn(move || {
                for (s, shard) in rx {
                    let r = if failed.load(std::sync::atomic::Ordering::Relaxed) {
                        Ok(0)
                    } else {
                        load_lane(con, vec![(s, shard)], keys, bytes, packed, progress).map_err(
                            |(s, e)| {
                                e.context(format!(
                                    "cannot load shard {s} of `{}` (key `{}`); nothing \
                                     changed under `{}`",
                                    a.name,
                                    show(&keys[s as usize]),
                                    a.name
                                ))
                            },
                        )
                    };
                    if done.send(r).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        // with `overlap`, the next group is made while the nodes load the previous one (at
        // most two groups in memory); else each group is loaded before the next is made
        let mut outstanding = 0usize;
        let mut sent = 0u64;
        let wait = |outstanding: &mut usize, sent: &mut u64| -> Result<()> {
            let mut first_error = None;
            while *outstanding > 0 {
                *outstanding -= 1;
                match done_rx.recv() {
                    Ok(Ok(n)) => *sent += n,
                    Ok(Err(e)) => {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                        first_error.get_or_insert(e);
                    }
                    Err(_) => {
                        first_error.get_or_insert(anyhow!("a loading thread stopped"));
                        break;
                    }
                }
            }
            first_error.map_or(Ok(()), Err)
        };
        let mut first = 0u32;
        while first < layout.shards() {
            let range = first..(first + per_group).min(layout.shards());
            first = range.end;
            if !overlap {
                wait(&mut outstanding, &mut sent)?;
            }
            let t = Instant::now();
            let made = make(&layout, range.clone());
            making += t.elapsed();
            let made = match made {
                Ok(x) if x.len() == range.len() => Ok(x),
                Ok(x) => Err(anyhow!("{} shards made for shards {range:?}", x.len())),
                Err(e) => Err(e),
            };
            let shards = match made {
                Ok(x) => x,
                Err(e) => {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    let _ = wait(&mut outstanding, &mut sent);
                    return Err(e);
                }
            };
            wait(&mut outstanding, &mut sent)?;
            for (s, shard) in range.zip(shards) {
                lanes[lane[s as usize]]
                    .send((s, shard))
                    .map_err(|_| anyhow!("a loading thread stopped"))?;
                outstanding += 1;
            }
        }
        wait(&mut outstanding, &mut sent)?;
        Ok(sent)
    });
    let sent = match outcome {
        Ok(n) => n,
        Err(e) => {
            let _ = delete_keys(&mut con, &keys);
            return Err(e);
        }
    };
    drop(progress);
    if let Err(e) = check_shards(&mut con, &a.name, &layout) {
        let _ = delete_keys(&mut con, &keys);
        return Err(e.context(format!("nothing changed under `{}`", a.name)));
    }
    let _: () = redis::cmd("SET")
        .arg(&a.name)
        .arg(layout.to_bytes())
        .query(&mut con)
        .with_context(|| format!("cannot write the descriptor `{}`", a.name))?;
    if let Some(old) = old {
        delete_keys(&mut con, &old.shard_keys(a.name.as_bytes()))
            .context("the filter is switched; deleting the previous shards failed")?;
    }
    let secs = start.elapsed().as_secs_f64();
    let made = if a.keys {
        format!(
            "of which {:.1} s making the shards, {per_group} at a time",
            making.as_secs_f64()
        )
    } else {
        "each shard cut from the file as it is sent".to_string()
    };
    note(&format!(
        "pushed `{}`: {} of {} each, {} items, {} sent in {secs:.1} s ({}/s, {made}); \
         generation {generation}",
        a.name,
        count(u64::from(layout.shards()), "shard", "shards"),
        bytes(layout.shard_bytes()),
        group(items.get()),
        bytes(sent),
        bytes((sent as f64 / secs.max(1e-9)) as u64),
    ));
    Ok(0)
}

/// One node's connection for the bulk load: the first `--nodes` URL's settings (user,
/// password, protocol) at the node's address.
fn node_connection(n: &Nodes, node: &str) -> Result<redis::Connection> {
    let first = n
        .nodes
        .iter()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
        .ok_or_else(|| anyhow!("--nodes names no node"))?;
    let url = if first.contains("://") {
        first.to_string()
    } else {
        format!("redis://{first}")
    };
    let mut info = redis::IntoConnectionInfo::into_connection_info(url.as_str())
        .with_context(|| format!("bad --nodes {first}"))?;
    let (host, port) = node
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
        .ok_or_else(|| anyhow!("the cluster names a node `{node}` without a port"))?;
    // A node that does not know its own address (a one-node cluster never met by another)
    // is named with an empty host, or `?`: it is reached at the host `--nodes` gave.
    let host = match (host.as_str(), &info.addr) {
        ("" | "?", redis::ConnectionAddr::Tcp(h, _)) => h.clone(),
        _ => host,
    };
    info.addr = redis::ConnectionAddr::Tcp(host, port);
    redis::Client::open(info)
        .and_then(|c| c.get_connection())
        .with_context(|| format!("cannot connect to the node {node}"))
}

/// Load `lane`'s shards (all of one node) under their keys by `BF.LOADCHUNK` over `con`:
/// each shard's file-format bytes as the header alone, then chunks of at most [`CHUNK`]
/// bytes, at most [`PIPELINE`] commands awaiting their reply. Returns the bytes sent.
fn load_lane(
    con: &mut redis::Connection,
    lane: Vec<(u32, Shard<'_>)>,
    keys: &[Vec<u8>],
    bytes: &mut Vec<u8>,
    packed: &mut Vec<u8>,
    progress: &Progress,
) -> std::result::Result<u64, (u32, anyhow::Error)> {
    let mut waiting: std::collections::VecDeque<(u32, u64)> = std::collections::VecDeque::new();
    let mut sent = 0u64;
    let reply = |con: &mut redis::Connection,
                 waiting: &mut std::collections::VecDeque<(u32, u64)>|
     -> std::result::Result<(), (u32, anyhow::Error)> {
        let (s, n) = waiting.pop_front().expect("a command awaits its reply");
        match con.recv_response() {
            Ok(Value::ServerError(e)) => Err((s, anyhow!("{}", e.details().unwrap_or(e.code())))),
            Ok(_) => {
                progress.inc(n);
                Ok(())
            }
            Err(e) => Err((s, e.into())),
        }
    };
    for (s, mut shard) in lane {
        let key = &keys[s as usize];
        loop {
            bytes.clear();
            let Some(it) = shard.next_chunk(bytes) else {
                break;
            };
            let n = bytes.len();
            // the command's head, then the chunk as it was made (no copy into the head)
            let it = it.to_string();
            packed.clear();
            packed.extend_from_slice(b"*4\r\n$12\r\nBF.LOADCHUNK\r\n");
            for arg in [key.as_slice(), it.as_bytes()] {
                packed.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                packed.extend_from_slice(arg);
                packed.extend_from_slice(b"\r\n");
            }
            packed.extend_from_slice(format!("${n}\r\n").as_bytes());
            bytes.extend_from_slice(b"\r\n");
            con.send_packed_command(packed)
                .and_then(|()| con.send_packed_command(bytes))
                .map_err(|e| (s, e.into()))?;
            waiting.push_back((s, n as u64));
            if waiting.len() >= PIPELINE {
                reply(con, &mut waiting)?;
            }
            sent += n as u64;
        }
    }
    while !waiting.is_empty() {
        reply(con, &mut waiting)?;
    }
    Ok(sent)
}

/// One batch of input lines and their keys (`None`: the line has no key field).
#[derive(Default)]
struct Batch {
    lines: Vec<Vec<u8>>,
    keys: Vec<Option<Vec<u8>>>,
}

/// Send every key of `batch` to its shard with `command` (`BF.MEXISTS` or `BF.MADD`), one
/// command per shard, pipelined; the replies in input order (`None` for a line without key).
fn send(
    con: &mut ClusterConnection,
    name: &str,
    layout: &Layout,
    shard_keys: &[Vec<u8>],
    command: &str,
    batch: &Batch,
) -> Result<Vec<Option<bool>>> {
    let mut per: Vec<Vec<usize>> = vec![Vec::new(); layout.shards() as usize];
    for (i, k) in batch.keys.iter().enumerate() {
        if let Some(k) = k {
            per[layout.shard_of(k) as usize].push(i);
        }
    }
    let used: Vec<usize> = (0..per.len()).filter(|&s| !per[s].is_empty()).collect();
    let mut p = cluster_pipe();
    for &s in &used {
        let c = p.cmd(command).arg(&shard_keys[s]);
        for &i in &per[s] {
            c.arg(batch.keys[i].as_deref().expect("keyed line"));
        }
    }
    let what = |s: usize| format!("shard {s} of `{name}` (key `{}`)", show(&shard_keys[s]));
    let replies: Vec<Value> = match p.query(con) {
        Ok(r) => r,
        Err(e) => {
            // an error reply fails the whole pipeline: ask each shard again (the same keys,
            // so no key is added twice) to name the one that refuses
            for &s in &used {
                let mut c = redis::cmd(command);
                c.arg(&shard_keys[s]);
                for &i in &per[s] {
                    c.arg(batch.keys[i].as_deref().expect("keyed line"));
                }
                let refused = match c.query::<Value>(con) {
                    Err(e) => Some(e.detail().map_or_else(|| e.to_string(), str::to_string)),
                    Ok(Value::Array(items)) => items.iter().find_map(|v| match v {
                        Value::ServerError(e) => Some(e.details().unwrap_or(e.code()).to_string()),
                        _ => None,
                    }),
                    Ok(_) => None,
                };
                if let Some(why) = refused {
                    let hint = if why.contains("full") {
                        " (the shard holds its share of the filter's capacity; the batch's keys \
                         for the other shards, and this shard's keys before the refusal, were \
                         added)"
                    } else {
                        ""
                    };
                    bail!("{}: {why}{hint}", what(s));
                }
            }
            return Err(anyhow!(e).context(format!(
                "{command} on the shards of `{name}` ({} keys)",
                group(batch.keys.len() as u64)
            )));
        }
    };
    let mut out = vec![None; batch.keys.len()];
    for (&s, reply) in used.iter().zip(replies) {
        let what = || what(s);
        let Value::Array(items) = reply else {
            bail!("{}: unexpected reply {reply:?}", what());
        };
        if items.len() != per[s].len() {
            // BF.MADD ends its reply early with the error of a full non-scaling shard
            if let Some(Value::ServerError(e)) = items.last() {
                bail!(
                    "{}: {} (the shard holds its share of the filter's capacity; the batch's \
                     keys for the other shards, and this shard's keys before the refusal, were \
                     added)",
                    what(),
                    e.details().unwrap_or(e.code())
                );
            }
            bail!(
                "{}: {} answers for {} keys",
                what(),
                items.len(),
                per[s].len()
            );
        }
        for (&i, v) in per[s].iter().zip(items) {
            out[i] = Some(match v {
                Value::Int(n) => n != 0,
                Value::Boolean(b) => b,
                Value::ServerError(e) => {
                    bail!("{}: {}", what(), e.details().unwrap_or(e.code()))
                }
                other => bail!("{}: unexpected answer {other:?}", what()),
            });
        }
    }
    Ok(out)
}

/// Read the inputs in batches of [`BATCH`] lines.
fn for_each_batch(
    inputs: &[String],
    spec: &KeySpec,
    mut f: impl FnMut(&Batch) -> Result<()>,
) -> Result<input::Counts> {
    let mut batch = Batch::default();
    let counts = input::for_each_line(inputs, spec, |line, key| {
        batch.lines.push(line.to_vec());
        batch.keys.push(key.map(<[u8]>::to_vec));
        if batch.lines.len() >= BATCH {
            f(&batch)?;
            batch = Batch::default();
        }
        Ok(())
    })?;
    if !batch.lines.is_empty() {
        f(&batch)?;
    }
    Ok(counts)
}

fn check(a: ClusterCheckArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let mut con = connect(&a.nodes)?;
    let layout = open_layout(&mut con, &a.name)?;
    check_shards(&mut con, &a.name, &layout)?;
    let shard_keys = layout.shard_keys(a.name.as_bytes());
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut matched = 0u64;
    for_each_batch(&a.inputs, &spec, |batch| {
        let hits = send(&mut con, &a.name, &layout, &shard_keys, "BF.MEXISTS", batch)?;
        for (line, hit) in batch.lines.iter().zip(hits) {
            // a line without the key field is certainly not in the set
            if hit.unwrap_or(false) != a.invert {
                matched += 1;
                if !a.count {
                    out.write_all(line)?;
                    out.write_all(b"\n")?;
                }
            }
        }
        Ok(())
    })?;
    if a.count {
        writeln!(out, "{matched}")?;
    }
    out.flush()?;
    Ok(if matched > 0 { 0 } else { 1 })
}

fn add(a: ClusterAddArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let mut con = connect(&a.nodes)?;
    let layout = open_layout(&mut con, &a.name)?;
    check_shards(&mut con, &a.name, &layout)?;
    let shard_keys = layout.shard_keys(a.name.as_bytes());
    let mut new = 0u64;
    let counts = for_each_batch(&a.inputs, &spec, |batch| {
        let added = send(&mut con, &a.name, &layout, &shard_keys, "BF.MADD", batch)?;
        new += added.iter().filter(|x| **x == Some(true)).count() as u64;
        Ok(())
    })?;
    let items: Vec<u64> = check_shards(&mut con, &a.name, &layout)?
        .iter()
        .map(|s| s.0)
        .collect();
    let total: u64 = items.iter().sum();
    let skipped = if counts.skipped > 0 {
        format!(" ({} without field, skipped)", group(counts.skipped))
    } else {
        String::new()
    };
    note(&format!(
        "{} read{skipped}, {}, {} in total; fpr now {} (target {}, model from the shards' items)",
        count(counts.lines, "line", "lines"),
        count(new, "new item", "new items"),
        group(total),
        rate(layout.current_fpr(&items)),
        target(layout.target_fpr())
    ));
    Ok(0)
}

/// `CLUSTER SLOTS`: for each slot range, the primary's `host:port`.
fn slot_owners(con: &mut ClusterConnection) -> Result<Vec<(u16, u16, String)>> {
    let v: Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(con)
        .context("CLUSTER SLOTS")?;
    let mut out = Vec::new();
    if let Value::Array(ranges) = v {
        for r in ranges {
            let Value::Array(r) = r else { continue };
            let (Some(Value::Int(lo)), Some(Value::Int(hi)), Some(Value::Array(node))) =
                (r.first(), r.get(1), r.get(2))
            else {
                continue;
            };
            let host = match node.first() {
                Some(Value::BulkString(b)) => show(b),
                _ => continue,
            };
            let port = match node.get(1) {
                Some(Value::Int(p)) => *p,
                _ => continue,
            };
            out.push((*lo as u16, *hi as u16, format!("{host}:{port}")));
        }
    }
    Ok(out)
}

fn info(a: ClusterInfoArgs) -> Result<u8> {
    let mut con = connect(&a.nodes)?;
    let layout = open_layout(&mut con, &a.name)?;
    let shards = check_shards(&mut con, &a.name, &layout)?;
    let owners = slot_owners(&mut con)?;
    let keys = layout.shard_keys(a.name.as_bytes());
    let node_of = |slot: u16| {
        owners
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            .map_or_else(|| "(unassigned)".to_string(), |o| o.2.clone())
    };
    let items: Vec<u64> = shards.iter().map(|s| s.0).collect();
    let total_items: u64 = items.iter().sum();
    let total_bytes: u64 = shards.iter().map(|s| s.1).sum();
    let mut nodes: Vec<String> = keys.iter().map(|k| node_of(key_slot(k))).collect();
    let per_shard: Vec<(usize, String, u16, String, u64, u64)> = keys
        .iter()
        .enumerate()
        .map(|(s, k)| {
            let slot = key_slot(k);
            (s, show(k), slot, nodes[s].clone(), shards[s].0, shards[s].1)
        })
        .collect();
    nodes.sort();
    nodes.dedup();
    let now = layout.current_fpr(&items);
    if a.json {
        let v = serde_json::json!({
            "name": a.name,
            "generation": layout.generation(),
            "shards": layout.shards(),
            "nodes": nodes,
            "blocks_per_shard": layout.blocks_per_shard(),
            "hashes": layout.hashes(),
            "layout": layout.block_layout().name(),
            "hash": layout.hasher().algorithm().name(),
            "capacity": layout.capacity(),
            "target_fpr": layout.target_fpr(),
            "items": total_items,
            "bytes": total_bytes,
            "current_fpr": now,
            "shard_list": per_shard.iter().map(|(s, k, slot, node, items, len)| serde_json::json!({
                "shard": s, "key": k, "slot": slot, "node": node, "items": items, "bytes": len,
            })).collect::<Vec<_>>(),
        });
        crate::output::json(&v)?;
        return Ok(0);
    }
    let mut out = crate::output::stdout();
    crate::output::table(
        &mut out,
        &[
            ("name", a.name.clone()),
            ("generation", layout.generation().to_string()),
            ("shards", group(u64::from(layout.shards()))),
            ("nodes", format!("{} ({})", nodes.len(), nodes.join(", "))),
            (
                "shape",
                format!(
                    "{} blocks of 512 bits per shard, {} layout, k = {}, hash {}",
                    group(layout.blocks_per_shard()),
                    layout.block_layout().name(),
                    layout.hashes(),
                    layout.hasher().algorithm().name()
                ),
            ),
            ("capacity", group(layout.capacity())),
            ("target fpr", target(layout.target_fpr())),
            ("items", group(total_items)),
            (
                "bytes",
                format!("{} ({})", group(total_bytes), bytes(total_bytes)),
            ),
            (
                "fpr now",
                format!("{} (model, from the shards' items)", rate(now)),
            ),
        ],
    )?;
    writeln!(out, "shard\tslot\tnode\titems\tbytes\tkey")?;
    for (s, k, slot, node, items, len) in &per_shard {
        writeln!(out, "{s}\t{slot}\t{node}\t{items}\t{len}\t{k}")?;
    }
    out.flush()?;
    Ok(0)
}
