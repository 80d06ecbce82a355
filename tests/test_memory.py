"""Memory a server frees goes back to the system (``docserve.memory``), in a fresh process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import threading
    from docserve.memory import limit_arenas, release_free_memory

    def rss_mb():
        status = open("/proc/self/status").read().splitlines()
        return int(next(line.split()[1] for line in status if line.startswith("VmRSS"))) // 1024

    limit_arenas()
    kept = []

    def load():  # as a model's load does: large temporary buffers on a worker thread
        buffers = [bytes(2000) for _ in range(100_000)]
        kept.extend(buffers[::1000])  # a few survivors keep the arena's top in use
        del buffers

    worker = threading.Thread(target=load)
    worker.start()
    worker.join()
    before = rss_mb()
    release_free_memory()
    print(before, rss_mb())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_memory_freed_on_a_worker_thread_is_returned():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    before, after = map(int, run.stdout.split())
    assert before > 150  # the freed buffers were still resident
    assert after < before - 100, (before, after)
