"""The int8 encoder: the shipped fp32 weights quantized here, once per machine.

ONNX Runtime's dynamic quantization turns the weights of every MatMul and the token-embedding
table (Gather) into signed 8-bit integers with one scale per output channel; activations are
quantized on the fly at run time. ``reduce_range`` keeps the weights to 7 bits, which avoids the
saturation of the u8×s8 instructions on CPUs without VNNI (AVX2, early AVX-512), so one file
gives the same vectors on every x86 CPU. Per-tensor scales were unusable (cosine to the fp32
vectors 0.951); per channel they are 0.99.

Quantizing takes a few seconds and is deterministic: the result is kept in the user's cache,
named by the fp32 weights' hash, the quantizer's settings and ONNX Runtime's version, and its
own hash is what the build records and the server checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import onnxruntime
from docserve.encoder import bert_model, file_sha256, read_model_id

QUANTIZATION = {
    "op_types_to_quantize": ["MatMul", "Gather"],
    "per_channel": True,
    "reduce_range": True,
    "weight_type": "QInt8",
    "extra_options": {"MatMulConstBOnly": True},  # weights only: attention stays fp32
}


def cache_dir() -> Path:
    """Where quantized encoders are kept: ``$DOCMCP_CACHE_DIR``, else the user's cache folder."""
    configured = os.environ.get("DOCMCP_CACHE_DIR")
    if configured:
        return Path(configured).expanduser() / "encoders"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "docs-mcp" / "encoders"


def int8_encoder(model_dir: Path) -> Path:
    """The int8 ONNX encoder of the sentence-transformers folder ``model_dir`` (made if needed)."""
    weights = file_sha256(model_dir / "model.safetensors")
    recipe = json.dumps([QUANTIZATION, onnxruntime.__version__], sort_keys=True)
    key = hashlib.sha256(f"{weights}\0{recipe}".encode()).hexdigest()[:16]
    name = read_model_id(model_dir).rsplit("/", 1)[-1]
    target = cache_dir() / f"{name}-int8-{key}.onnx"
    if target.is_file():
        return target
    print(f"quantizing {name} to int8 (once on this machine) ...", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        source, quantized = Path(work) / "fp32.onnx", Path(work) / "int8.onnx"
        source.write_bytes(bert_model(model_dir))
        quantize(source, quantized)
        os.replace(quantized, target)
    return target


def quantize(source: Path, target: Path) -> None:
    """Quantize the fp32 ONNX model ``source`` into ``target`` (see :data:`QUANTIZATION`)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    settings = dict(QUANTIZATION)
    settings["weight_type"] = QuantType[str(settings["weight_type"])]
    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process applies to CNNs
    try:
        quantize_dynamic(source, target, **settings)
    finally:
        logging.getLogger().setLevel(quiet)
