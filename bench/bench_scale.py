"""Benchmark building and serving at scale: synthetic corpora of 100k to 1M chunks.

Run: .venv/bin/python bench/bench_scale.py --pool DB [--pool DB ...] [--rows 100000 1000000]
         [--server servers/docs-mcp-docs] [--hnsw]

The pool databases are built servers (the same model as --server) whose real chunks seed the
synthetic ones (see bench/synthetic.py); --server is a built server folder whose runtime script
and model serve the synthetic databases (refresh it with tools/build_mcp.sh first). For each size
it prints:
  - the non-embedding build stages on precomputed vectors: the snapshot into a DuckLake, and
    materializing the served database (time and peak memory, each in a child process);
  - hybrid search in process, query embedding included, p50 and p95 (every query distinct), and
    the same with a path filter and a section filter;
  - each retriever's cost, and its recall@10 against the exact answer (float32 brute force for
    vectors, uncapped postings for BM25);
  - cold start of the stdio server to its first answer, and resident memory after 20 queries;
  - with --hnsw: DuckDB's HNSW index on the same rows (build time and peak memory, query time and
    recall@10 at several ef_search values).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_server import cold_start, percentiles, queries, script_command  # noqa: E402

EF_SEARCH = (64, 128, 256)


def child(stage: str, *args: str) -> tuple[float, float, str]:
    """Run ``stage`` of this script in a child process: seconds, its peak MB, its output."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--stage", stage, *args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"stage {stage} failed (exit {proc.returncode})")
    return time.perf_counter() - start, usage.ru_maxrss / 1024, out.strip()


def stage_generate(rows: str, parquet: str, *pools: str) -> None:
    from synthetic import read_pool, write_parquet

    write_parquet(read_pool([Path(p) for p in pools]), int(rows), Path(parquet))


def stage_snapshot(parquet: str, lake_dir: str) -> None:
    from docbuild.stages.snapshot import LakeLocation, snapshot_chunks

    lake = LakeLocation(f"{lake_dir}/catalog.ducklake", f"{lake_dir}/data/")
    snap = snapshot_chunks(lake, Path(parquet), "synthetic", {})
    print(snap.snapshot_id)


def stage_materialize(lake_dir: str, snapshot: str, database: str, info: str) -> None:
    from docbuild.stages.materialize import materialize
    from docbuild.stages.snapshot import LakeLocation
    from docserve.build_info import BuildInfo

    lake = LakeLocation(f"{lake_dir}/catalog.ducklake", f"{lake_dir}/data/")
    build_info = json.loads(Path(info).read_text())
    materialize(
        lake,
        int(snapshot),
        Path(database),
        int(build_info["dimension"]),
        BuildInfo.of(build_info),
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )


def stage_hnsw(database: str) -> None:
    from docserve.duck import connect

    con = connect(Path(database), extensions=("vss",))
    con.execute("SET hnsw_enable_experimental_persistence = true")
    con.execute(
        "CREATE INDEX chunks_embedding_hnsw ON chunks USING HNSW (embedding) "
        "WITH (metric = 'cosine', ef_construction = 128, M = 16)"
    )
    con.execute("CHECKPOINT")
    con.close()


def engine_for(server: Path, database: Path, **search: object):
    from docserve.config import load_settings
    from docserve.query_embedder import QueryEmbedder
    from docserve.search import SearchEngine
    from docserve.store import ChunkStore

    settings = load_settings(server.name, server)
    settings.embedding.cache_size = 0
    for key, value in search.items():
        setattr(settings.search, key, value)
    store = ChunkStore(database, "build it", settings.search)
    embedder = QueryEmbedder(settings.embedding, server / "runtime" / "model")
    return SearchEngine(store, embedder, settings.search)


def timed(run, items) -> list[float]:
    times = []
    for item in items:
        start = time.perf_counter()
        run(item)
        times.append((time.perf_counter() - start) * 1000)
    return times


def exact_vectors(database: Path) -> np.ndarray:
    """The float32 embeddings in row order, read from the table (the ground truth)."""
    from docserve.store import open_read_only

    con = open_read_only(database)
    table = con.execute("SELECT embedding FROM chunks ORDER BY chunk_row").fetch_arrow_table()
    con.close()
    return table.column(0).combine_chunks().flatten().to_numpy().reshape(len(table), -1)


def serving(server: Path, database: Path, n: int) -> None:
    engine = engine_for(server, database)
    asked = queries(n)
    vectors = [engine.embedder.embed(q) for q in asked]
    for q in queries(10, seed=1):
        engine.search(q)
    print(f"  hybrid search, in process:         {percentiles(timed(engine.search, asked))}")
    filters = {"path 'area-3/'": {"path": "area-3/"}, "section 'tutorial'": {"section": "tutorial"}}
    for label, options in filters.items():
        times = timed(lambda q, o=options: engine.search(q, **o), queries(n // 2, seed=5))
        print(f"  hybrid search, {label:19}{percentiles(times)}")
    depth = engine.settings.candidates
    truth = exact_vectors(database)
    times, recall = [], []
    for v in vectors:
        start = time.perf_counter()
        found = engine.vector_candidates(v, depth)
        times.append((time.perf_counter() - start) * 1000)
        exact = set(np.argpartition(-(truth @ v), 9)[:10].tolist())
        recall.append(len(exact & {row for row, _ in found[:10]}) / 10)
    del truth
    print(
        f"  vector candidates ({engine.store.vectors.describe()}): {percentiles(times)}  "
        f"recall@10 {statistics.fmean(recall):.3f}"
    )
    embed = timed(engine.embedder.embed, queries(n // 2, seed=9))
    print(f"  query embedding:                   {percentiles(embed)}")
    if engine.store.keywords is None:
        return
    cap = engine.settings.keyword_postings_cap
    times, recall = [], []
    for q in asked:
        start = time.perf_counter()
        found = engine.keyword_candidates(q, depth)
        times.append((time.perf_counter() - start) * 1000)
        terms = engine.store.query_terms(q)
        full = engine.store.keywords.search(terms, 10, None, 1 << 62)
        recall.append(len({r for r, _ in full} & {r for r, _ in found[:10]}) / max(len(full), 1))
    print(
        f"  keyword candidates (cap {cap}):   {percentiles(times)}  "
        f"recall@10 vs uncapped {statistics.fmean(recall):.3f}"
    )


def hnsw_queries(database: Path, n: int) -> None:
    from docserve.duck import connect

    truth = exact_vectors(database)
    con = connect(database, read_only=True, extensions=("vss",))
    rng = np.random.default_rng(0)
    probes = truth[rng.choice(len(truth), n, replace=False)] + rng.normal(
        0, 0.02, (n, truth.shape[1])
    ).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    dim = truth.shape[1]
    for ef in EF_SEARCH:
        con.execute(f"SET hnsw_ef_search = {ef}")
        times, recall = [], []
        for v in probes:
            exact = set(np.argpartition(-(truth @ v), 9)[:10].tolist())
            start = time.perf_counter()
            rows = con.execute(
                f"SELECT chunk_row FROM chunks ORDER BY array_cosine_distance(embedding, "
                f"?::FLOAT[{dim}]) LIMIT 10",
                [v.tolist()],
            ).fetchall()
            times.append((time.perf_counter() - start) * 1000)
            recall.append(len(exact & {r[0] for r in rows}) / 10)
        print(
            f"  HNSW ef_search {ef:3}: {percentiles(times)}  recall@10 {statistics.fmean(recall):.3f}"
        )


def build(
    rows: int, pools: list[str], parquet: Path, lake: Path, database: Path, info: Path
) -> None:
    """Generate ``rows`` chunks, snapshot them into a DuckLake, materialize ``database``."""
    seconds, _, _ = child("generate", str(rows), str(parquet), *pools)
    print(f"\n{rows} synthetic chunks (generated in {seconds:.0f} s)")
    seconds, peak, snapshot = child("snapshot", str(parquet), str(lake))
    print(f"  snapshot stage:    {seconds:6.1f} s, peak {peak:5.0f} MB")
    seconds, peak, _ = child("materialize", str(lake), snapshot, str(database), str(info))
    size = database.stat().st_size / 1e6
    print(f"  materialize stage: {seconds:6.1f} s, peak {peak:5.0f} MB, file {size:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", action="append", default=[], help="a built server database")
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--server", type=Path, default=Path("servers/docs-mcp-docs"))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--hnsw", action="store_true", help="also build and query HNSW (slow)")
    parser.add_argument("--keep", type=Path, help="keep the databases in this folder")
    parser.add_argument(
        "--reuse", action="store_true", help="serve a database kept in --keep instead of building"
    )
    parser.add_argument("--stage", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        name, *rest = args.stage
        globals()[f"stage_{name}"](*rest)
        return
    if not args.pool:
        parser.error("give at least one --pool database (a built server's .db)")
    server = args.server.resolve()
    script = next((server / "runtime").glob("*_server.py"))
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    from docserve.build_info import BuildInfo
    from docserve.store import open_read_only

    con = open_read_only(Path(args.pool[0]))
    info = BuildInfo.read(con).as_dict()
    con.close()
    (work / "info.json").write_text(json.dumps(info))
    try:
        for rows in args.rows:
            parquet, lake = work / f"{rows}.parquet", work / f"lake-{rows}"
            database = (args.keep or work) / f"synthetic_{rows}.db"
            if args.reuse and database.is_file():
                print(f"\n{rows} synthetic chunks (reusing {database})")
            else:
                build(rows, args.pool, parquet, lake, database, work / "info.json")
            serving(server, database, args.queries)
            start, rss = cold_start(script_command(script, database), runs=3)
            print(f"  cold start to first answer: {start}")
            print(f"  resident memory after 20 queries: {rss:.0f} MB")
            if args.hnsw:
                seconds, peak, _ = child("hnsw", str(database))
                print(f"  HNSW index build: {seconds:.0f} s, peak {peak:.0f} MB")
                hnsw_queries(database, min(args.queries, 100))
            shutil.rmtree(lake, ignore_errors=True)
            parquet.unlink(missing_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
