"""Benchmark what the model reads, and what filters cost.

Run: .venv/bin/python bench/bench_answers.py [--server servers/NAME] [--scale 100000]

Without --server it builds the Mojo manual server into a temporary project first (about a
minute). It prints:
  - the overhead of the text a model reads for a default search (top 5, hybrid) over every query
    of tests/eval/mojo-manual.jsonl, through a real MCP client over stdio: text characters per
    passage character, against the JSON rendering of the same answer (what the text was before);
    and the largest answer in tokens;
  - warm hybrid search latency in process on a synthetic copy grown to --scale chunks (two
    documentation versions), unfiltered and with each filter, p50 and p95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import build_mojo, engine_for, grow, percentiles, queries

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO / "tests" / "eval" / "mojo-manual.jsonl"


async def overhead(script: Path) -> str:
    """Text and JSON characters per passage character over the eval queries."""
    from docserve.tokens import TokenCounter
    from fastmcp import Client

    counter = TokenCounter(script.parent / "model")
    texts, jsons, passages, tokens = [], [], [], []
    lines = [json.loads(line) for line in EVAL.read_text().splitlines() if line.strip()]
    async with Client(script, timeout=120) as client:
        for line in lines:
            result = await client.call_tool("search", {"query": line["query"]})
            text = "\n".join(part.text for part in result.content)
            data = result.structured_content
            texts.append(len(text))
            jsons.append(len(json.dumps(data)))
            passages.append(sum(len(r["content"]) for r in data["results"]))
            tokens.append(counter.count(text))
    per_query = [t / p for t, p in zip(texts, passages, strict=True)]
    return (
        f"{len(lines)} queries: text/passage {sum(texts) / sum(passages):.3f} overall, "
        f"per query mean {statistics.mean(per_query):.3f}, max {max(per_query):.3f}; "
        f"as JSON it would be {sum(jsons) / sum(passages):.3f}; "
        f"largest answer {max(tokens)} tokens (mean {statistics.mean(tokens):.0f})"
    )


def add_versions(database: Path) -> None:
    """Label the synthetic copy's rows with two versions, as a two-version build would."""
    from docserve.duck import connect

    con = connect(database, extensions=("fts",))
    con.execute("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS version VARCHAR")
    con.execute(
        "UPDATE chunks SET version = CASE WHEN hash(document_id) % 2 = 0 THEN 'a' ELSE 'b' END"
    )
    versions = [{"label": "a"}, {"label": "b"}]
    con.execute("DELETE FROM build_info WHERE key IN ('versions', 'default_version')")
    con.execute(
        "INSERT INTO build_info VALUES ('versions', ?), ('default_version', ?)",
        [json.dumps(versions), json.dumps("b")],
    )
    con.execute("CHECKPOINT")
    con.close()


def filtered_latency(server: Path, database: Path, n: int = 100) -> list[str]:
    """p50/p95 of hybrid search per filter (query embedding included, every query distinct)."""
    engine = engine_for(server, database)
    cases = {
        "version=all (no filter)": {"version": "all"},
        "default version": {},
        "path='pointers/'": {"path": "pointers/"},
        "path='**/index.mdx'": {"path": "**/index.mdx"},
        "section='ownership'": {"section": "ownership"},
        "path + section + version": {"path": "pointers/", "section": "pointer", "version": "a"},
    }
    for q in queries(10, seed=1):
        engine.search(q)
    lines = []
    for seed, (label, filters) in enumerate(cases.items()):
        engine.search("warm up this filter", **filters)
        times, sizes = [], []
        for q in queries(n, seed=100 + seed):
            start = time.perf_counter()
            answer = engine.search(q, 5, "hybrid", **filters)
            times.append((time.perf_counter() - start) * 1000)
            sizes.append(len(answer.results))
        lines.append(f"{label:28} {percentiles(times)}  results {statistics.mean(sizes):.1f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--server", type=Path, help="a built server (default: build the Mojo manual)"
    )
    parser.add_argument("--scale", type=int, default=100_000, help="chunks in the synthetic copy")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-answers-"))
    server = args.server.resolve() if args.server else build_mojo(tmp)
    script = next((server / "runtime").glob("*_server.py"))
    database = next((server / "runtime").glob("*.db"))
    print(f"server {server.name}")
    print(f"  default search, what the model reads: {asyncio.run(overhead(script))}")
    if args.scale:
        big = tmp / f"scaled_{args.scale}.db"
        grow(database, big, args.scale, hnsw=False)
        add_versions(big)
        print(f"\nsynthetic copy: {args.scale} chunks in two versions; hybrid search in process")
        for line in filtered_latency(server, big):
            print(f"  {line}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
