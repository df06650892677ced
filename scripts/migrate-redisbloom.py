#!/usr/bin/env python3
"""Move RedisBloom BF and CF values to a server running bloomery's Redis module.

RedisBloom's RDB values (types MBbloom-- and MBbloomCF) do not load into bloomery's module,
so values move through RedisBloom's own dump commands: SCAN finds the keys, BF.SCANDUMP /
CF.SCANDUMP read each value as a header chunk and data chunks, and BF.LOADCHUNK /
CF.LOADCHUNK on the new server rebuild it. bloomery keeps RedisBloom's hashing and layout for
such values, so they answer every query exactly as before.

    migrate-redisbloom.py copy --from redis://old:6379 --to redis://new:6379 [--verify]
    migrate-redisbloom.py save --from redis://old:6379 --dir chunks/
    migrate-redisbloom.py load --to redis://new:6379 --dir chunks/

`save` writes one chunk file per key (format: crates/bloomery/src/redisbloom/chunk_file.rs),
which `load` sends later and `bloomery import --from redisbloom FILE OUT` turns into a
bloomery file. Options: --match PATTERN (SCAN pattern, default *), --replace (delete a key
that already exists on the target; default: leave it and report it), --verify (copy/load:
read every value back from the target with SCANDUMP and compare byte for byte), --batch N
(SCAN COUNT). Time to live is kept. URLs: redis://[user:password@]host[:port][/db] or
rediss:// for TLS. The target may be a cluster node: MOVED replies are followed.

Stop writes to the old server first (or read from a replica): a value written during its
SCANDUMP is copied torn. Needs only the Python 3 standard library.
"""

import argparse
import os
import socket
import ssl
import struct
import sys
import urllib.parse

BF_TYPE = "MBbloom--"
CF_TYPE = "MBbloomCF"
# The same values on a server running bloomery's module (moved there earlier): the script
# reads them alike, so values can move on again between bloomery servers.
MOVED_TYPES = {"BLMRY-RBB": BF_TYPE, "BLMRY-RBC": CF_TYPE}
MAGIC = b"RBCHUNKS"


class ReplyError(Exception):
    """An error reply from the server."""


class Conn:
    """A minimal RESP2 client: one socket, commands as byte arguments."""

    def __init__(self, host, port, user=None, password=None, db=0, tls=False):
        self.addr = (host, port)
        sock = socket.create_connection((host, port), timeout=60)
        if tls:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.rd = sock.makefile("rb")
        self.auth = (user, password, db, tls)
        if password is not None:
            self.call("AUTH", *([user] if user else []), password)
        if db:
            self.call("SELECT", db)

    @classmethod
    def from_url(cls, url):
        u = urllib.parse.urlparse(url)
        if u.scheme not in ("redis", "rediss"):
            raise SystemExit(f"not a redis:// or rediss:// URL: {url}")
        db = int(u.path.lstrip("/") or 0)
        user = urllib.parse.unquote(u.username) if u.username else None
        password = urllib.parse.unquote(u.password) if u.password else None
        return cls(u.hostname or "127.0.0.1", u.port or 6379, user, password, db,
                   u.scheme == "rediss")

    def sibling(self, host, port):
        """A connection to another node with the same credentials."""
        user, password, db, tls = self.auth
        return Conn(host, port, user, password, db, tls)

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, *args):
        self.sock.sendall(self.encode(args))

    def read(self):
        line = self.rd.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed by the server")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rd.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError(f"unexpected reply {line!r}")

    def call(self, *args):
        self.send(*args)
        r = self.read()
        if isinstance(r, ReplyError):
            raise r
        return r

    def pipeline(self, commands):
        """Send all commands, then read every reply (errors returned, not raised)."""
        self.sock.sendall(b"".join(self.encode(c) for c in commands))
        return [self.read() for _ in commands]


class Target:
    """Commands for one key on the target, following cluster MOVED redirections."""

    def __init__(self, conn):
        self.conn = conn
        self.nodes = {conn.addr: conn}

    def call(self, *args):
        for _ in range(5):
            try:
                return self.conn.call(*args)
            except ReplyError as e:
                msg = str(e)
                if not msg.startswith("MOVED "):
                    raise
                host, port = msg.split()[2].rsplit(":", 1)
                addr = (host, int(port))
                if addr not in self.nodes:
                    self.nodes[addr] = self.conn.sibling(*addr)
                self.conn = self.nodes[addr]
        raise ReplyError("too many MOVED redirections")


def scan_keys(conn, pattern, batch):
    """Every key of RedisBloom's two types matching the pattern, with its type."""
    for scanned in (BF_TYPE, CF_TYPE, *MOVED_TYPES):
        ty = MOVED_TYPES.get(scanned, scanned)
        cursor = b"0"
        while True:
            try:
                cursor, keys = conn.call("SCAN", cursor, "MATCH", pattern, "COUNT", batch,
                                         "TYPE", scanned)
            except ReplyError as e:
                # Valkey refuses a type name no loaded module defines (Redis returns no
                # keys): such a server holds no value of that type.
                if "unknown type name" in str(e):
                    break
                raise
            for k in keys:
                yield k, ty
            if cursor == b"0":
                break


def cf_header_from_info(conn, key):
    """The CF header chunk of a filter with no items (RedisBloom's CF.SCANDUMP returns none
    for it), from CF.INFO: items, buckets, deletes, filters, bucket size, iterations,
    expansion."""
    info = conn.call("CF.INFO", key)
    f = {info[i].decode() if isinstance(info[i], bytes) else info[i]: info[i + 1]
         for i in range(0, len(info), 2)}
    return struct.pack("<QQQQHHH", f["Number of items inserted"], f["Number of buckets"],
                       f["Number of items deleted"], f["Number of filters"],
                       f["Bucket size"], f["Max iterations"], f["Expansion rate"])


def dump(conn, key, ty):
    """(iterator, bytes) of every chunk of the value, header first."""
    cmd = "BF.SCANDUMP" if ty == BF_TYPE else "CF.SCANDUMP"
    chunks = []
    it = 0
    while True:
        nxt, data = conn.call(cmd, key, it)
        if nxt == 0:
            break
        chunks.append((nxt, data))
        it = nxt
    if not chunks and ty == CF_TYPE:
        chunks.append((1, cf_header_from_info(conn, key)))
    if not chunks:
        raise ReplyError(f"{cmd} returned no header chunk")
    return chunks


def write_chunk_file(path, key, ty, pttl, chunks):
    tag = b"B" if ty == BF_TYPE else b"C"
    parts = [MAGIC, b"\x01", tag, b"\x00\x00", struct.pack("<I", len(key)), key,
             struct.pack("<q", pttl)]
    for it, data in chunks:
        parts.append(struct.pack("<qQ", it, len(data)))
        parts.append(data)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"".join(parts))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_chunk_file(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != MAGIC or b[8] != 1 or b[9:10] not in (b"B", b"C"):
        raise ValueError(f"{path}: not a RedisBloom chunk file")
    ty = BF_TYPE if b[9:10] == b"B" else CF_TYPE
    (klen,) = struct.unpack_from("<I", b, 12)
    key = b[16:16 + klen]
    at = 16 + klen
    (pttl,) = struct.unpack_from("<q", b, at)
    at += 8
    chunks = []
    while at < len(b):
        it, n = struct.unpack_from("<qQ", b, at)
        at += 16
        if at + n > len(b):
            raise ValueError(f"{path}: truncated chunk")
        chunks.append((it, b[at:at + n]))
        at += n
    return key, ty, pttl, chunks


def load(target, key, ty, pttl, chunks, replace, verify):
    """LOADCHUNK every chunk into the target; on failure the half-loaded key is deleted."""
    if target.call("EXISTS", key):
        if not replace:
            return "exists on the target (use --replace)"
        target.call("DEL", key)
    cmd = "BF.LOADCHUNK" if ty == BF_TYPE else "CF.LOADCHUNK"
    try:
        for it, data in chunks:
            target.call(cmd, key, it, data)
        if pttl > 0:
            target.call("PEXPIRE", key, pttl)
        if verify:
            back = dump(target.conn, key, ty)
            if back != chunks:
                raise ReplyError("the target's SCANDUMP differs from the source's")
    except (ReplyError, ConnectionError) as e:
        try:
            target.call("DEL", key)
        except (ReplyError, ConnectionError):
            pass
        return str(e)
    return None


def safe_name(i, key):
    keep = "".join(c if c.isalnum() or c in "-_." else "_"
                   for c in key.decode("utf-8", "replace"))[:80]
    return f"{i:08d}-{keep}.rbchunks"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["copy", "save", "load"])
    p.add_argument("--from", dest="src", help="the RedisBloom server (copy, save)")
    p.add_argument("--to", dest="dst", help="the bloomery server (copy, load)")
    p.add_argument("--dir", help="directory of chunk files (save, load)")
    p.add_argument("--match", default="*", help="SCAN MATCH pattern (default *)")
    p.add_argument("--batch", type=int, default=1000, help="SCAN COUNT (default 1000)")
    p.add_argument("--replace", action="store_true",
                   help="delete a key that already exists on the target")
    p.add_argument("--verify", action="store_true",
                   help="read each value back from the target and compare")
    a = p.parse_args()
    need = {"copy": ("src", "dst"), "save": ("src", "dir"), "load": ("dst", "dir")}[a.mode]
    for n in need:
        if getattr(a, n) is None:
            p.error(f"{a.mode} needs --{ {'src': 'from', 'dst': 'to'}.get(n, n) }")

    moved, failed = 0, 0
    if a.mode in ("copy", "save"):
        src = Conn.from_url(a.src)
        target = Target(Conn.from_url(a.dst)) if a.mode == "copy" else None
        if a.mode == "save":
            os.makedirs(a.dir, exist_ok=True)
        for i, (key, ty) in enumerate(scan_keys(src, a.match, a.batch)):
            try:
                pttl = src.call("PTTL", key)
                chunks = dump(src, key, ty)
            except ReplyError as e:
                print(f"{key!r}: cannot dump: {e}", file=sys.stderr)
                failed += 1
                continue
            if a.mode == "save":
                write_chunk_file(os.path.join(a.dir, safe_name(i, key)), key, ty,
                                 pttl, chunks)
                err = None
            else:
                err = load(target, key, ty, pttl, chunks, a.replace, a.verify)
            if err:
                print(f"{key!r}: {err}", file=sys.stderr)
                failed += 1
            else:
                moved += 1
    else:
        target = Target(Conn.from_url(a.dst))
        for name in sorted(os.listdir(a.dir)):
            if not name.endswith(".rbchunks"):
                continue
            key, ty, pttl, chunks = read_chunk_file(os.path.join(a.dir, name))
            err = load(target, key, ty, pttl, chunks, a.replace, a.verify)
            if err:
                print(f"{key!r}: {err}", file=sys.stderr)
                failed += 1
            else:
                moved += 1
    verb = {"copy": "copied", "save": "saved", "load": "loaded"}[a.mode]
    print(f"{moved} keys {verb}, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
