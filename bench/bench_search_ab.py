"""Benchmark search settings against each other on one database, interleaved so that drift
(the machine's other work, caches warming) hits every setting alike.

Run: .venv/bin/python bench/bench_search_ab.py --database DB [--server servers/docs-mcp-docs]
         --variant NAME=KEY:VALUE,KEY:VALUE [--variant ...] [--queries 100] [--rounds 2]

Each variant sets ``search.*`` keys (``prose_keyword_weight:null``, ``weak_margin:0.05``; an empty
list keeps the server's configuration). Every query is asked once under each variant in turn,
``--rounds`` times over, with the query embedding included (no cache), as ``bench_scale.py``
asks them. Prints p50 and p95 per variant, and how many answers were weak under each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_retrieval import parse_variant
from bench_scale import engine_for, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, required=True, help="a served database")
    parser.add_argument("--server", type=Path, default=Path("servers/docs-mcp-docs"))
    parser.add_argument("--variant", action="append", required=True, help="NAME=KEY:VALUE,...")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    variants = dict(parse_variant(v) for v in args.variant)
    engine = engine_for(args.server, args.database)
    base = {key: getattr(engine.settings, key) for v in variants.values() for key in v}
    for query in queries(10, seed=1):  # warm up
        engine.search(query)
    asked = queries(args.queries)
    times: dict[str, list[float]] = {name: [] for name in variants}
    weak = dict.fromkeys(variants, 0)
    for _ in range(args.rounds):
        for query in asked:
            for name, settings in variants.items():
                for key, value in {**base, **settings}.items():
                    setattr(engine.settings, key, value)
                start = time.perf_counter()
                response = engine.search(query)
                times[name].append((time.perf_counter() - start) * 1000)
                weak[name] += response.weak
    print(f"{engine.store.size:,} chunks, {len(asked)} queries x {args.rounds} rounds")
    for name, values in times.items():
        ordered = sorted(values)
        p95 = ordered[round(0.95 * (len(ordered) - 1))]
        print(
            f"  {name:<16} p50 {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms  "
            f"weak answers {weak[name]} of {len(values)}"
        )


if __name__ == "__main__":
    main()
