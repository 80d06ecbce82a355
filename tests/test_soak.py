"""The soak benchmark's short run: a hub over HTTP under eight clients for two minutes, with one
library rebuilt half-way (``bench/bench_soak.py --minutes 2``, the 60-minute run's CI form)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_two_minute_soak_has_no_errors_and_flat_memory(tmp_path: Path):
    figures = tmp_path / "soak.json"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "bench_soak.py"),
            "--minutes",
            "2",
            "--json",
            str(figures),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    soak = json.loads(figures.read_text())
    assert soak["calls"] > 500, soak  # eight clients kept it busy
    assert soak["errors"] == 0, soak["error_samples"]
    assert soak["new_page_found_after_s"] is not None, (
        "the rebuilt library's new page never answered"
    )
    rss = [minute["rss_mb"] for minute in soak["per_minute"]]
    assert rss[-1] <= rss[0] * 1.05, rss  # no growth beyond 5% over the run
    assert "errors" in run.stdout and "RSS" in run.stdout  # the report a maintainer reads
