"""The eval stage (when the config names a question set): score the new database before it
replaces the served one; the scores go into its ``build_info`` and ``servers/NAME/eval/``."""

from __future__ import annotations

import json
from pathlib import Path

from docbuild.build_report import log
from docbuild.config import ProcessingConfig
from docbuild.services import evaluate


def wanted(config: ProcessingConfig) -> bool:
    """Whether the config names a question set to score each build on."""
    return bool(config.eval.queries or config.eval.beir)


def evaluate_database(
    config: ProcessingConfig, database: Path, snapshot_id: int | None
) -> dict[str, object]:
    """Score ``database`` on the configured question set; write the report (Markdown and JSON)
    and a line of history; return the ``build_info`` entry."""
    spec = config.eval
    judged = (
        evaluate.load_beir(Path(spec.beir), spec.split)
        if spec.beir
        else evaluate.load_jsonl(Path(spec.queries or ""))
    )
    engine = evaluate.open_engine(config.server_root, database=database)
    try:
        scores = evaluate.evaluate(engine, judged, spec.modes)
    finally:
        engine.store.close()
    table = evaluate.markdown_table(scores)
    folder = config.folder.eval
    folder.mkdir(exist_ok=True)
    (folder / "report.md").write_text(table + "\n")
    (folder / "report.json").write_text(json.dumps(evaluate.as_json(scores), indent=2) + "\n")
    log(table)
    source = str(spec.beir or spec.queries)
    evaluate.record_run(folder, source, len(judged), scores, snapshot_id)
    return {
        "eval": {
            "queries": source,
            "count": len(judged),
            "scores": evaluate.as_json(scores),
            "table": table,
        }
    }
