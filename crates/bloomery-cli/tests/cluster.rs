//! `bloomery cluster`: a local Redis Cluster of 6 primaries (loopback ports, the bloomery
//! module on each) holds a blocked filter file pushed in 6 shards; every key answers as the
//! local file before and after `redis-cli --cluster reshard` moves a shard's slot, after
//! `cluster add` (beside `bloomery add` on the file), after a restart from RDB, after a
//! replica of a shard's node takes over (`CLUSTER FAILOVER`), and after a second push; a
//! missing or mismatched shard is an error naming it.
//!
//! Needs `redis-server` and `redis-cli` (Debian's redis-server and redis-tools); without them
//! the test says it skipped (and fails when `CI` is set).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bloomery"))
}

/// The server binary: `BLOOMERY_REDIS_SERVER` (e.g. a `valkey-server`), else `redis-server`.
fn server_bin() -> std::ffi::OsString {
    std::env::var_os("BLOOMERY_REDIS_SERVER").unwrap_or_else(|| "redis-server".into())
}

fn have_tools() -> bool {
    let ok = [server_bin(), "redis-cli".into()].iter().all(|b| {
        Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server and redis-cli are required in CI"
        );
        eprintln!("skipping: redis-server or redis-cli not installed (apt-get install redis-server redis-tools)");
    }
    ok
}

/// The module built beside this test binary (target/<profile>/), built if missing.
fn module_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let name = format!(
        "{}bloomery_redis{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let candidates = [deps.join(&name), deps.parent().unwrap().join(&name)];
    if let Some(p) = candidates.iter().find(|p| p.exists()) {
        return p.clone();
    }
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "bloomery-redis"])
        .status()
        .unwrap();
    assert!(status.success(), "cargo build -p bloomery-redis failed");
    candidates.into_iter().find(|p| p.exists()).unwrap()
}

fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if port < 55535 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

struct Node {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn start(port: u16, dir: &Path, module: &Path) -> Node {
        std::fs::create_dir_all(dir).unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("redis.log"))
            .unwrap();
        let child = Command::new(server_bin())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(dir)
            .args(["--save", "", "--appendonly", "no"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-node-timeout", "5000"])
            .arg("--loadmodule")
            .arg(module)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let n = Node {
            port,
            dir: dir.to_path_buf(),
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while n.cli(&["PING"]).trim() != "PONG" {
            assert!(
                Instant::now() < deadline,
                "redis-server on {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        n
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn id(&self) -> String {
        self.cli(&["CLUSTER", "MYID"]).trim().to_string()
    }

    /// Save an RDB and stop.
    fn stop_saving(&mut self) {
        self.cli(&["SHUTDOWN", "SAVE"]);
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_ok(nodes: &[Node]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for n in nodes {
        while !n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok") {
            assert!(Instant::now() < deadline, "cluster did not converge");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `bloomery check FILE probes` and `bloomery cluster check NAME probes` print the same
/// lines with the same status, and with -v the complement.
fn same_answers(file: &Path, probes: &Path, nodes: &str, name: &str) {
    for invert in [false, true] {
        let mut local = bin();
        local.arg("check").arg(file).arg(probes);
        let mut remote = bin();
        remote
            .args(["cluster", "check", name, "--nodes", nodes])
            .arg(probes);
        if invert {
            local.arg("-v");
            remote.arg("-v");
        }
        let (l, r) = (run(&mut local), run(&mut remote));
        assert_eq!(
            l.status.code(),
            r.status.code(),
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert!(l.status.code().is_some_and(|c| c <= 1));
        assert!(
            l.stdout == r.stdout,
            "answers differ ({} vs {} bytes)",
            l.stdout.len(),
            r.stdout.len()
        );
    }
}

/// The item count `bloomery info` gives for a file.
fn kind_items(file: &Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&ok(&run(bin().args(["info", "--json"]).arg(file)))).unwrap();
    v["items"].clone()
}

/// The start of the slot range holding `slot` and the id of its primary.
fn owner_of(node: &Node, slot: u16) -> (u16, String) {
    // CLUSTER NODES: `id addr flags master - ping pong epoch state lo-hi ...`
    for line in node.cli(&["CLUSTER", "NODES"]).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 9 || !f[2].contains("master") {
            continue;
        }
        for r in &f[8..] {
            let (lo, hi) = match r.split_once('-') {
                Some((a, b)) => (a.parse::<u16>(), b.parse::<u16>()),
                None => (r.parse::<u16>(), r.parse::<u16>()),
            };
            if let (Ok(lo), Ok(hi)) = (lo, hi) {
                if (lo..=hi).contains(&slot) {
                    return (lo, f[0].to_string());
                }
            }
        }
    }
    panic!("no owner for slot {slot}");
}

#[test]
fn sharded_filter_on_a_six_node_cluster() {
    if !have_tools() {
        return;
    }
    let started = Instant::now();
    let module = module_path();
    let tmp = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (0..6)
        .map(|i| Node::start(free_port(), &tmp.path().join(format!("n{i}")), &module))
        .collect();
    let addrs: Vec<String> = nodes.iter().map(Node::addr).collect();
    ok(&run(Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])));
    wait_ok(&nodes);
    let seeds = addrs[..2].join(",");

    // the local filter: positions layout (--hashes), 20,000 keys of 30,000 capacity
    let file = tmp.path().join("f.bloom");
    ok(&run(bin()
        .arg("create")
        .arg(&file)
        .args(["-n", "30000", "-p", "0.01", "--hashes", "7"])));
    let members = tmp.path().join("members.txt");
    std::fs::write(&members, common::lines(0..20_000)).unwrap();
    ok(&run(bin().arg("add").arg(&file).arg(&members)));
    let probes = tmp.path().join("probes.txt");
    std::fs::write(&probes, common::lines(10_000..60_000)).unwrap();

    // a shard count that does not divide the blocks is refused before anything is written
    let bad = run(bin()
        .args(["cluster", "push"])
        .arg(&file)
        .args(["--nodes", &seeds, "--name", "users", "--shards", "7"]));
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("do not divide into 7 shards"));

    ok(&run(bin().args(["cluster", "push"]).arg(&file).args([
        "--nodes", &seeds, "--name", "users", "--shards", "6",
    ])));
    same_answers(&file, &probes, &seeds, "users");
    let count = ok(&run(bin()
        .args(["cluster", "check", "users", "-c", "--nodes", &seeds])
        .arg(&members)));
    assert_eq!(count.trim(), "20000");

    // shards built straight from the keys: no false negatives, the rate within the target
    ok(&run(bin()
        .args([
            "cluster", "push", "--keys", "-n", "20000", "-p", "0.01", "--seed", "5",
        ])
        .args(["--nodes", &seeds, "--name", "built", "--shards", "6"])
        .arg(&members)));
    let hits = ok(&run(bin()
        .args(["cluster", "check", "built", "-c", "--nodes", &seeds])
        .arg(&members)));
    assert_eq!(hits.trim(), "20000");
    let bv: serde_json::Value = serde_json::from_str(&ok(&run(
        bin().args(["cluster", "info", "built", "--nodes", &seeds, "--json"])
    )))
    .unwrap();
    assert_eq!(bv["layout"], "salted", "the default layout at 1%: {bv}");
    let strangers = tmp.path().join("strangers.txt");
    std::fs::write(&strangers, common::lines(100_000..140_000)).unwrap();
    let fp: f64 = ok(&run(bin()
        .args(["cluster", "check", "built", "-c", "--nodes", &seeds])
        .arg(&strangers)))
    .trim()
    .parse()
    .unwrap();
    // at most the target 1% of 40,000, plus 3σ of the binomial
    let bound = 400.0 + 3.0 * (40_000.0f64 * 0.01 * 0.99).sqrt();
    assert!(
        fp <= bound,
        "{fp} false positives of 40,000 (bound {bound})"
    );
    // under a memory limit that holds two of the six shards, they are built two at a time
    // (the others from spilled hashes): the same filter, answer for answer
    let bounded = run(bin()
        .args(["--max-memory", "9000"])
        .args([
            "cluster", "push", "--keys", "-n", "20000", "-p", "0.01", "--seed", "5",
        ])
        .args(["--nodes", &seeds, "--name", "bounded", "--shards", "6"])
        .arg(&members));
    ok(&bounded);
    assert!(
        String::from_utf8_lossy(&bounded.stderr).contains("(2 at a time)"),
        "{}",
        String::from_utf8_lossy(&bounded.stderr)
    );
    for input in [&members, &strangers] {
        let answers = |name: &str| {
            let o = run(bin()
                .args(["cluster", "check", name, "-v", "--nodes", &seeds])
                .arg(input));
            assert!(o.status.code().is_some_and(|c| c <= 1), "{o:?}");
            (o.status.code(), o.stdout)
        };
        assert_eq!(answers("bounded"), answers("built"));
    }
    let items_of = |name: &str| {
        let v: serde_json::Value = serde_json::from_str(&ok(&run(
            bin().args(["cluster", "info", name, "--nodes", &seeds, "--json"])
        )))
        .unwrap();
        v["items"].as_u64().unwrap()
    };
    assert_eq!(items_of("bounded"), items_of("built"));
    // a limit below one shard is refused before anything is written
    let e = run(bin()
        .args(["--max-memory", "4000"])
        .args(["cluster", "push", "--keys", "-n", "20000", "-p", "0.01"])
        .args(["--nodes", &seeds, "--name", "nope", "--shards", "6"])
        .arg(&members));
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("does not fit in memory"));

    let info =
        ok(&run(bin().args([
            "cluster", "info", "users", "--nodes", &seeds, "--json",
        ])));
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(v["shards"], 6);
    assert_eq!(v["generation"], 1);
    let items: u64 = v["items"].as_u64().unwrap();
    let local: serde_json::Value =
        serde_json::from_str(&ok(&run(bin().args(["info", "--json"]).arg(&file)))).unwrap();
    assert_eq!(items, local["items"].as_u64().unwrap());
    let text = ok(&run(
        bin().args(["cluster", "info", "users", "--nodes", &seeds])
    ));
    assert!(
        text.contains("shards") && text.contains("generation"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("{") && l.ends_with(":s0"))
            .count(),
        1,
        "{text}"
    );
    // the default create picks the salted layout at 1% (xxh3-64): its shards answer every key
    // as the file does, before and after the same keys are added to both
    let salted = tmp.path().join("salted.bloom");
    ok(&run(bin()
        .arg("create")
        .arg(&salted)
        .args(["-n", "30000", "-p", "0.01"])));
    let kind: serde_json::Value =
        serde_json::from_str(&ok(&run(bin().args(["info", "--json"]).arg(&salted)))).unwrap();
    assert_eq!(kind["layout"], "salted", "{kind}");
    ok(&run(bin().arg("add").arg(&salted).arg(&members)));
    ok(&run(bin().args(["cluster", "push"]).arg(&salted).args([
        "--nodes", &seeds, "--name", "salted", "--shards", "4",
    ])));
    let sv: serde_json::Value = serde_json::from_str(&ok(&run(
        bin().args(["cluster", "info", "salted", "--nodes", &seeds, "--json"])
    )))
    .unwrap();
    assert_eq!(sv["layout"], "salted", "{sv}");
    assert_eq!(sv["hash"], "xxh3-64", "{sv}");
    assert_eq!(sv["items"], kind_items(&salted), "{sv}");
    let hits = ok(&run(bin()
        .args(["cluster", "check", "salted", "-c", "--nodes", &seeds])
        .arg(&members)));
    assert_eq!(hits.trim(), "20000");
    same_answers(&salted, &probes, &seeds, "salted");
    // push --keys lays the shards out as `create -n -p` does: from the same keys, the same
    // filter answer for answer (4 shards divide the file's blocks)
    ok(&run(bin()
        .args(["cluster", "push", "--keys", "-n", "30000", "-p", "0.01"])
        .args(["--nodes", &seeds, "--name", "salted-keys", "--shards", "4"])
        .arg(&members)));
    same_answers(&salted, &probes, &seeds, "salted-keys");
    let late = tmp.path().join("late-salted.txt");
    std::fs::write(&late, common::lines(70_000..72_000)).unwrap();
    ok(&run(bin().arg("add").arg(&salted).arg(&late)));
    ok(&run(bin()
        .args(["cluster", "add", "salted", "--nodes", &seeds])
        .arg(&late)));
    let probes_salted = tmp.path().join("probes-salted.txt");
    std::fs::write(&probes_salted, common::lines(65_000..100_000)).unwrap();
    same_answers(&salted, &probes_salted, &seeds, "salted");
    // the sectors layout: its shards answer as the file, before and after the same keys are
    // added to both
    let sectors = tmp.path().join("s.bloom");
    ok(&run(bin().arg("create").arg(&sectors).args([
        "-n",
        "30000",
        "-p",
        "0.01",
        "--kind",
        "blocked-sectors",
    ])));
    let kind: serde_json::Value =
        serde_json::from_str(&ok(&run(bin().args(["info", "--json"]).arg(&sectors)))).unwrap();
    assert_eq!(kind["layout"], "sectors", "{kind}");
    ok(&run(bin().arg("add").arg(&sectors).arg(&members)));
    ok(&run(bin()
        .args(["cluster", "push"])
        .arg(&sectors)
        .args(["--nodes", &seeds, "--name", "s", "--shards", "2"])));
    same_answers(&sectors, &probes, &seeds, "s");
    let late = tmp.path().join("late.txt");
    std::fs::write(&late, common::lines(70_000..72_000)).unwrap();
    ok(&run(bin().arg("add").arg(&sectors).arg(&late)));
    ok(&run(bin()
        .args(["cluster", "add", "s", "--nodes", &seeds])
        .arg(&late)));
    let probes_s = tmp.path().join("probes-s.txt");
    std::fs::write(&probes_s, common::lines(65_000..100_000)).unwrap();
    same_answers(&sectors, &probes_s, &seeds, "s");
    let list = v["shard_list"].as_array().unwrap();
    let mut slots: Vec<u64> = list.iter().map(|s| s["slot"].as_u64().unwrap()).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 6);

    // reshard: move the slots from the start of a shard's node range through the shard's slot
    let (shard_slot, lo, from) = list
        .iter()
        .map(|s| {
            let slot = s["slot"].as_u64().unwrap() as u16;
            let (lo, id) = owner_of(&nodes[0], slot);
            (slot, lo, id)
        })
        .min_by_key(|(slot, lo, _)| slot - lo)
        .unwrap();
    let to = nodes.iter().map(Node::id).find(|id| *id != from).unwrap();
    let moved = (shard_slot - lo + 1).to_string();
    ok(&run(Command::new("redis-cli")
        .args(["--cluster", "reshard", &addrs[0]])
        .args(["--cluster-from", &from, "--cluster-to", &to])
        .args(["--cluster-slots", &moved, "--cluster-yes"])));
    wait_ok(&nodes);
    assert_eq!(
        owner_of(&nodes[0], shard_slot).1,
        to,
        "the shard's slot did not move"
    );
    same_answers(&file, &probes, &seeds, "users");

    // add the same keys to the file and to the cluster
    let more = tmp.path().join("more.txt");
    std::fs::write(&more, common::lines(60_000..62_000)).unwrap();
    ok(&run(bin().arg("add").arg(&file).arg(&more)));
    let added = run(bin()
        .args(["cluster", "add", "users", "--nodes", &seeds])
        .arg(&more));
    ok(&added);
    let probes2 = tmp.path().join("probes2.txt");
    std::fs::write(&probes2, common::lines(55_000..90_000)).unwrap();
    same_answers(&file, &probes2, &seeds, "users");

    // restart every node from its RDB
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let dirs: Vec<PathBuf> = nodes.iter().map(|n| n.dir.clone()).collect();
    for n in &mut nodes {
        n.stop_saving();
    }
    drop(nodes);
    let mut nodes: Vec<Node> = ports
        .iter()
        .zip(&dirs)
        .map(|(&p, d)| Node::start(p, d, &module))
        .collect();
    wait_ok(&nodes);
    same_answers(&file, &probes2, &seeds, "users");

    // a replica of shard 0's primary takes over (CLUSTER FAILOVER)
    let slot0 = v["shard_list"][0]["slot"].as_u64().unwrap() as u16;
    let (_, primary) = owner_of(&nodes[0], slot0);
    let primary_addr = nodes
        .iter()
        .find(|n| n.id() == primary)
        .map(Node::addr)
        .unwrap();
    let replica = Node::start(free_port(), &tmp.path().join("replica"), &module);
    ok(&run(Command::new("redis-cli")
        .args(["--cluster", "add-node", &replica.addr(), &primary_addr])
        .args([
            "--cluster-slave",
            "--cluster-master-id",
            &primary,
        ])));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !replica
        .cli(&["INFO", "replication"])
        .contains("master_link_status:up")
    {
        assert!(Instant::now() < deadline, "the replica did not sync");
        std::thread::sleep(Duration::from_millis(100));
    }
    ok(&run(Command::new("redis-cli").args([
        "-p",
        &replica.port.to_string(),
        "CLUSTER",
        "FAILOVER",
    ])));
    while !replica
        .cli(&["INFO", "replication"])
        .contains("role:master")
        || owner_of(&nodes[1], slot0).1 != replica.id()
    {
        assert!(Instant::now() < deadline, "the failover did not happen");
        std::thread::sleep(Duration::from_millis(100));
    }
    nodes.push(replica);
    wait_ok(&nodes);
    same_answers(&file, &probes2, &seeds, "users");

    // a second push switches to generation 2 and deletes generation 1's shards
    ok(&run(bin().args(["cluster", "push"]).arg(&file).args([
        "--nodes", &seeds, "--name", "users", "--shards", "6",
    ])));
    let v: serde_json::Value = serde_json::from_str(&ok(&run(
        bin().args(["cluster", "info", "users", "--nodes", &seeds, "--json"])
    )))
    .unwrap();
    assert_eq!(v["generation"], 2);
    let keys: usize = nodes
        .iter()
        .filter(|n| n.cli(&["INFO", "replication"]).contains("role:master"))
        .map(|n| n.cli(&["DBSIZE"]).trim().parse::<usize>().unwrap())
        .sum();
    assert_eq!(
        keys, 34,
        "three filters of 6 shards, two of 4, one of 2, and a descriptor each"
    );
    same_answers(&file, &probes2, &seeds, "users");

    // a shard that holds its share of the capacity refuses further keys, named
    let few = tmp.path().join("few.txt");
    std::fs::write(&few, common::lines(0..1_000)).unwrap();
    ok(&run(bin()
        .args(["cluster", "push", "--keys", "-n", "1000", "-p", "0.01"])
        .args(["--nodes", &seeds, "--name", "tiny", "--shards", "2"])
        .arg(&few)));
    let e = run(bin()
        .args(["cluster", "add", "tiny", "--nodes", &seeds])
        .arg(&more));
    assert_eq!(e.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("of `tiny` (key `{") && msg.contains("full"),
        "{msg}"
    );

    // a missing shard, then a mismatched one, is an error naming it
    let shard3 = v["shard_list"][3]["key"].as_str().unwrap().to_string();
    let c = |args: &[&str]| {
        run(Command::new("redis-cli")
            .args(["-c", "-p", &nodes[0].port.to_string()])
            .args(args))
    };
    ok(&c(&["DEL", &shard3]));
    let e = run(bin()
        .args(["cluster", "check", "users", "--nodes", &seeds])
        .arg(&probes));
    assert_eq!(e.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains(&format!("shard 3 of `users` (key `{shard3}`) is missing")),
        "{msg}"
    );
    ok(&c(&["BF.RESERVE", &shard3, "0.01", "1000", "NONSCALING"]));
    let e = run(bin().args(["cluster", "info", "users", "--nodes", &seeds]));
    assert_eq!(e.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains(&format!(
            "shard 3 of `users` (key `{shard3}`) does not match"
        )),
        "{msg}"
    );
    // a name that is not a descriptor
    let e = run(bin().args(["cluster", "check", "nothing-here", "--nodes", &seeds]));
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("no sharded filter named `nothing-here`"));
    eprintln!("cluster test took {:.1} s", started.elapsed().as_secs_f64());
}

/// A cluster of one primary that never met another node names itself with an empty host in
/// `CLUSTER SLOTS`: the push reaches it at the host `--nodes` gave, and every key answers as
/// the file (the default layout, salted, streamed shard by shard).
#[test]
fn sharded_filter_on_a_one_node_cluster() {
    if !have_tools() {
        return;
    }
    let module = module_path();
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(free_port(), &tmp.path().join("n0"), &module);
    node.cli(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    wait_ok(std::slice::from_ref(&node));
    let slots = node.cli(&["CLUSTER", "SLOTS"]);
    assert!(
        !slots.contains("127.0.0.1"),
        "the node is expected not to know its address: {slots}"
    );
    let file = tmp.path().join("f.bloom");
    ok(&run(bin()
        .arg("create")
        .arg(&file)
        .args(["-n", "30000", "-p", "0.01"])));
    let members = tmp.path().join("members.txt");
    std::fs::write(&members, common::lines(0..20_000)).unwrap();
    ok(&run(bin().arg("add").arg(&file).arg(&members)));
    let probes = tmp.path().join("probes.txt");
    std::fs::write(&probes, common::lines(10_000..60_000)).unwrap();
    let seeds = node.addr();
    ok(&run(bin().args(["cluster", "push"]).arg(&file).args([
        "--nodes", &seeds, "--name", "one", "--shards", "4",
    ])));
    same_answers(&file, &probes, &seeds, "one");
    let count = ok(&run(bin()
        .args(["cluster", "check", "one", "-c", "--nodes", &seeds])
        .arg(&members)));
    assert_eq!(count.trim(), "20000");
}
