"""The example script runs end to end (on a smaller list)."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dedup_and_fpr.py"


def test_example_runs(tmp_path):
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--limit", "300000", "--plot", str(tmp_path / "fpr.png")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "wrongly dropped" in out.stdout and "measured" in out.stdout
