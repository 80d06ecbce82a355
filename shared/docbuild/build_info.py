"""The :class:`~docserve.build_info.BuildInfo` of a build, made from its config, embedder and report."""

from __future__ import annotations

import hashlib
import json

import duckdb
import numpy as np
from docserve.build_info import BuildInfo

from docbuild import __version__
from docbuild.build_report import BuildReport
from docbuild.config import ProcessingConfig
from docbuild.embedding import Embedder
from docbuild.services.sync import source_revision
from docbuild.stages.embed import PROBE_TEXT
from docbuild.stages.package import encoder_file_name


def build_info(
    config: ProcessingConfig, embedder: Embedder, report: BuildReport, probe: np.ndarray
) -> BuildInfo:
    """The build info of the build ``report`` describes, before it is snapshotted."""
    default = report.version(report.default_version)
    return BuildInfo(
        name=config.name,
        tool_version=__version__,
        duckdb_version=duckdb.__version__,
        embedding_provider=config.embedding.provider,
        model_id=embedder.model_id,
        model_cache_key=embedder.cache_key,
        model_sha256=embedder.weights_sha256,
        precision=embedder.precision,
        encoder_file=encoder_file_name(embedder),
        encoder_sha256=embedder.encoder_sha256,
        dimension=embedder.dimension,
        max_seq_length=config.chunking.max_tokens,
        chunking=vars(config.chunking),
        probe_text=PROBE_TEXT,
        probe_vector=[round(float(x), 6) for x in probe],
        # a versioned server's source is its default version's; each version's is in versions
        source_path=str(config.source.path),
        source_revision=(
            default.source_revision if default else source_revision(config.source.path)
        ),
        versions=[v.info() for v in report.versions],
        default_version=report.default_version,
        file_count=report.files,
        skipped_count=len(report.skipped),
        document_count=report.documents,
        chunk_count=report.chunks,
        config_hash=hashlib.sha256(
            json.dumps(config.raw, sort_keys=True, default=str).encode()
        ).hexdigest(),
    )
