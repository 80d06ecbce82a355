"""The int8 encoder: a server built with ``embedding.precision: int8`` ships its quantized encoder,
embeds queries with it, and never mixes encoders: a changed or missing encoder file turns
vector search off with a clear note, a change of precision embeds everything again, and a
rollback serves each build with its own encoder. Real model, real quantization, real server
over stdio with fastmcp's client."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import build_pages
from docbuild.config import DEFAULT_PRECISION, ConfigError, load_processing_config
from docbuild.distribution import package
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docbuild.stages.package import WEIGHTS_FILE
from docserve.build_info import BuildInfo
from docserve.doctor import file_sha256, model_checksums
from docserve.encoder import default_model_dir
from docserve.store import open_read_only
from fastmcp.client.transports import PythonStdioTransport
from test_server import LiveClient, text_of

PAGES = {
    "caching.md": "# Caching\n\nThe build keeps every vector it computed, keyed by a hash of the "
    "text, so a rebuild embeds only the passages that changed.\n",
    "tokens.md": "# Tokens\n\nText is split into wordpieces by the model's own tokenizer before "
    "it is counted against the chunk budget.\n",
    "rollback.md": "# Rollback\n\nEvery build is a snapshot in the lake; an earlier one can be "
    "served again without computing anything.\n",
    "fences.md": "# Code blocks\n\nA fenced code block is never cut in the middle.\n",
}
PARAPHRASE = "why does rebuilding not recompute embeddings for unchanged passages"
SCAFFOLDED = f"precision: {DEFAULT_PRECISION}"  # what a new server's config says
INT8 = {"processing_config.yaml": (SCAFFOLDED, "precision: int8")}
FP32 = {"processing_config.yaml": (SCAFFOLDED, "precision: fp32")}


@pytest.fixture(scope="module", autouse=True)
def encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Quantized encoders go to a throw-away cache, not the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCMCP_CACHE_DIR", str(tmp_path_factory.mktemp("encoder-cache")))
        yield


@pytest.fixture(scope="module")
def int8_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A server built with the int8 encoder (the model quantized here, by the build)."""
    root = tmp_path_factory.mktemp("int8-project")
    config, report = build_pages(root, "int8-docs", PAGES, None, INT8)
    assert report.embedded == report.chunks == len(PAGES)
    return config.server_root


def build_info(server: Path) -> dict:
    con = open_read_only(next((server / "runtime").glob("*.db")))
    try:
        return BuildInfo.read(con).as_dict()
    finally:
        con.close()


def live(server: Path, log: Path) -> LiveClient:
    script = next((server / "runtime").glob("*_server.py"))
    return LiveClient(PythonStdioTransport(script, python_cmd=sys.executable, log_file=log))


def test_an_int8_build_ships_its_encoder_and_answers_with_it(int8_server: Path, tmp_path: Path):
    info = build_info(int8_server)
    assert info["precision"] == "int8"
    encoder = int8_server / "runtime" / info["encoder_file"]
    assert file_sha256(encoder) == info["encoder_sha256"]
    assert encoder.stat().st_size <= 40_000_000  # token table quantized too (fp32: 90 MB)
    assert info["model_cache_key"].endswith(f":int8:{info['encoder_sha256'][:16]}")
    model = int8_server / "runtime" / "model"  # the tokenizer, not the fp32 weights (90 MB)
    assert (model / "tokenizer.json").is_file() and not (model / WEIGHTS_FILE).exists()
    assert WEIGHTS_FILE not in model_checksums(model)
    with live(int8_server, tmp_path / "server.log") as client:
        stats = client.call("stats")
        assert "int8 encoder" in text_of(stats)
        assert stats.structured_content["vector_search"] is True
        assert "int8: encoder-int8-" in stats.structured_content["query_embedder"]
        found = client.call("search", query=PARAPHRASE, mode="vector")
        text = text_of(found)
        assert text.index("Caching") < min(text.index(t) for t in ("Tokens", "Rollback"))
        assert "keyword search only" not in text
    script = next((int8_server / "runtime").glob("*_server.py"))
    doctor = subprocess.run(
        [sys.executable, str(script), "--doctor"], capture_output=True, text=True
    )
    assert f"int8 encoder {encoder.name}: as the build made it" in doctor.stdout + doctor.stderr
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


@pytest.mark.parametrize("damage", ["missing", "changed"])
def test_a_server_never_queries_with_another_encoder(
    int8_server: Path, tmp_path: Path, damage: str
):
    encoder = int8_server / "runtime" / build_info(int8_server)["encoder_file"]
    kept = encoder.read_bytes()
    try:
        if damage == "missing":
            encoder.unlink()
        else:
            encoder.write_bytes(kept[:-1] + bytes([kept[-1] ^ 1]))
        with live(int8_server, tmp_path / "server.log") as client:
            found = client.call("search", query="snapshot lake rollback")
            text = text_of(found)
            assert "Rollback" in text  # keyword search still answers
            assert f"int8 encoder {encoder.name}" in text or str(encoder) in text
            assert ("missing" if damage == "missing" else "SHA-256") in text
            assert "keyword search only" in text
            assert client.tool("stats")["vector_search"] is False
        script = next((int8_server / "runtime").glob("*_server.py"))
        doctor = subprocess.run(
            [sys.executable, str(script), "--doctor"], capture_output=True, text=True
        )
        assert doctor.returncode == 1
        assert f"int8 encoder {encoder.name}: {damage}" in doctor.stdout + doctor.stderr
    finally:
        encoder.write_bytes(kept)


def test_changing_precision_embeds_again_and_rollback_serves_each_build(project: Path):
    config, fp32 = build_pages(project, "switch-docs", PAGES, None, FP32)
    assert build_info(config.server_root)["precision"] == "fp32"
    processing = config.server_root / "config" / "processing_config.yaml"
    processing.write_text(processing.read_text().replace("precision: fp32", "precision: int8"))
    config = load_processing_config("switch-docs", project)
    int8 = Build(config).run()
    assert int8.embedded == int8.chunks  # no fp32 vector is reused for int8
    # and the lake replaces every row, though no text changed: its vectors are all new
    assert (int8.snapshot.added, int8.snapshot.removed) == (int8.chunks, fp32.chunks)
    runtime = config.server_root / "runtime"
    weights = runtime / "model" / WEIGHTS_FILE
    (shipped,) = list(runtime.glob("encoder-*.onnx"))
    assert not weights.exists()
    back = Build(config).rollback(fp32.snapshot.snapshot_id)
    assert back.chunks == fp32.chunks
    info = build_info(config.server_root)
    assert info["precision"] == "fp32" and not info.get("encoder_file")
    assert list(runtime.glob("encoder-*.onnx")) == []  # the served build needs none
    assert file_sha256(weights) == info["model_sha256"]  # but its weights are back
    assert top_hit(config.server_root) == "caching.md"
    Build(config).rollback(int8.snapshot.snapshot_id)
    assert [p.name for p in runtime.glob("encoder-*.onnx")] == [shipped.name]
    assert build_info(config.server_root)["encoder_file"] == shipped.name
    assert not weights.exists()
    assert top_hit(config.server_root) == "caching.md"


def top_hit(server: Path) -> str:
    """The first passage's file for the paraphrase, by vector search as the server answers."""
    from docbuild.services.evaluate import open_engine

    engine = open_engine(server)
    try:
        response = engine.search(PARAPHRASE, mode="vector")
        assert engine.model_mismatch is None and "vector" in response.retrievers
        return response.results[0].path
    finally:
        engine.store.close()


def test_an_int8_server_packages_the_shared_model_whole(int8_server: Path):
    """The model wheel is shared by every server built with the model, so an int8 server's
    carries the fp32 weights too; its own wheel and bundle carry the int8 encoder."""
    packaged = package("int8-docs", int8_server.parents[1], log=lambda message: None)
    encoder = build_info(int8_server)["encoder_file"]
    with zipfile.ZipFile(packaged.model_wheel) as wheel:
        (weights,) = [n for n in wheel.namelist() if n.endswith(f"/model/{WEIGHTS_FILE}")]
        digest = hashlib.sha256(wheel.read(weights)).hexdigest()
    assert digest == file_sha256(default_model_dir() / WEIGHTS_FILE)
    with zipfile.ZipFile(packaged.server_wheel) as wheel:
        assert any(n.endswith(f"/runtime/{encoder}") for n in wheel.namelist())
    (bundle,) = packaged.bundles
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
    assert f"server/runtime/{encoder}" in names
    assert "server/runtime/model/tokenizer.json" in names
    assert not any(n.endswith(WEIGHTS_FILE) for n in names)


def test_precision_settings_are_checked(project: Path):
    server = scaffold("checked-docs", str(project), "md", root=project, precision="int8")
    processing = server / "config" / "processing_config.yaml"
    assert "precision: int8" in processing.read_text()
    assert load_processing_config("checked-docs", project).embedding.precision == "int8"
    processing.write_text(processing.read_text().replace("precision: int8", "precision: int4"))
    with pytest.raises(ConfigError, match="precision must be one of fp32, int8"):
        load_processing_config("checked-docs", project)
    text = processing.read_text().replace("precision: int4", "precision: int8")
    processing.write_text(text.replace("provider: local", "provider: openai"))
    with pytest.raises(ConfigError, match="applies to the local encoder"):
        load_processing_config("checked-docs", project)


def test_the_eval_harness_queries_with_the_database_encoder(int8_server: Path):
    from docbuild.services.evaluate import open_engine

    engine = open_engine(int8_server)
    assert engine.embedder.encoder is not None
    assert engine.embedder.encoder.precision == "int8"
    response = engine.search(PARAPHRASE, mode="vector")
    assert engine.model_mismatch is None
    assert response.results[0].path == "caching.md"
