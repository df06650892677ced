"""Shared fixtures: the real `bloomery` CLI binary, the repository's golden files, a Redis
server with the bloomery module (when installed)."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "crates" / "bloomery" / "tests" / "golden" / "v1"
DATA = Path(__file__).resolve().parent / "data"
IN_CI = bool(os.environ.get("CI"))


def _target_dirs():
    t = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return [t / "release", t / "debug"]


def skip_or_fail(reason):
    """Skip with a reason outside CI; fail in CI, where everything must run."""
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def cli():
    """Path of the `bloomery` binary (BLOOMERY_CLI, else target/{release,debug}, else built
    with `cargo build -p bloomery-cli`)."""
    env = os.environ.get("BLOOMERY_CLI")
    if env:
        return Path(env)
    for d in _target_dirs():
        if (d / "bloomery").exists():
            return d / "bloomery"
    if shutil.which("cargo") is None:
        skip_or_fail("no bloomery CLI binary and no cargo to build it")
    subprocess.run(["cargo", "build", "-q", "-p", "bloomery-cli"], cwd=ROOT, check=True)
    return _target_dirs()[1] / "bloomery"


@pytest.fixture
def run_cli(cli, tmp_path):
    """Run the CLI in tmp_path; returns the CompletedProcess (stdout as bytes)."""

    def run(*args, input=None, check=True):
        p = subprocess.run(
            [str(cli), *map(str, args)],
            cwd=tmp_path,
            input=input,
            capture_output=True,
        )
        if check and p.returncode != 0:
            raise AssertionError(
                f"bloomery {' '.join(map(str, args))} exited {p.returncode}: "
                f"{p.stderr.decode(errors='replace')}"
            )
        return p

    return run


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Resp:
    """A minimal RESP2 client for the tests (commands as bytes, replies parsed)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ValueError(f"bad reply {line!r}")

    def __call__(self, *args):
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        msg = b"*%d\r\n" % len(parts) + b"".join(
            b"$%d\r\n%s\r\n" % (len(p), p) for p in parts
        )
        self.sock.sendall(msg)
        return self._reply()


def redis_module_path():
    env = os.environ.get("BLOOMERY_REDIS_MODULE")
    if env:
        return Path(env)
    for d in _target_dirs():
        for p in (d / "libbloomery_redis.so", d / "deps" / "libbloomery_redis.so"):
            if p.exists():
                return p
    return None


@pytest.fixture
def redis(tmp_path):
    """A redis-server on a free loopback port with the bloomery module loaded."""
    if shutil.which("redis-server") is None:
        skip_or_fail("redis-server is not installed (apt-get install redis-server)")
    module = redis_module_path()
    if module is None:
        skip_or_fail("the Redis module is not built (cargo build -p bloomery-redis)")
    port = _free_port()
    log = open(tmp_path / "redis.log", "wb")
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", str(tmp_path),
            "--save", "",
            "--appendonly", "no",
            "--loadmodule", str(module),
        ],
        stdout=log,
        stderr=log,
    )
    client = None
    try:
        deadline = time.time() + 20
        while True:
            try:
                client = Resp(port)
                if client("PING") == "PONG":
                    break
            except (OSError, ConnectionError):
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError(
                    "redis-server did not start: " + (tmp_path / "redis.log").read_text()
                )
            time.sleep(0.05)
        yield client
    finally:
        if client is not None:
            client.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
