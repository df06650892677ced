"""Write redis-bf.dump and redis-cf.dump: BLOOMERY.DUMP replies of the bloomery Redis module.

Run by hand (never by the tests) with redis-server installed and the module built:

    cargo build -p bloomery-redis
    python crates/bloomery-py/tests/data/make_redis_dumps.py

Existing files are kept: a saved dump is a golden file, it is never regenerated.
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from conftest import Resp, _free_port, redis_module_path  # noqa: E402

KEYS = [f"redis-{i}" for i in range(300)] + [str(i) for i in range(-50, 50)]


def main():
    module = redis_module_path()
    if module is None or shutil.which("redis-server") is None:
        sys.exit("needs redis-server and the built module (cargo build -p bloomery-redis)")
    port = _free_port()
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
             "--save", "", "--loadmodule", str(module)],
            stdout=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                try:
                    r = Resp(port)
                    break
                except OSError:
                    time.sleep(0.05)
            r("BF.RESERVE", "bf", "0.01", "100")
            r("BF.MADD", "bf", *KEYS)
            r("CF.RESERVE", "cf", "1000")
            for k in KEYS:
                r("CF.ADD", "cf", k)
            for name, key in (("redis-bf.dump", "bf"), ("redis-cf.dump", "cf")):
                path = HERE / name
                if path.exists():
                    print(f"kept {path}")
                    continue
                path.write_bytes(r("BLOOMERY.DUMP", key))
                print(f"wrote {path}")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
