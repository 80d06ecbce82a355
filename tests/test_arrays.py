"""Search arrays stored in the database: both read paths return what was written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from docserve import arrays

RUNTIME = Path(__file__).resolve().parents[1] / "shared" / "runtime"


def sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "vectors": rng.standard_normal((300, 16)).astype(np.float32),
        "rows": rng.integers(0, 1 << 30, 5000).astype(np.int32),
        "starts": np.arange(0, 10**12, 10**9, dtype=np.int64),
        "names": arrays.strings_array(["alpha", "beta gamma", "", "δέλτα"]),
    }


@pytest.mark.parametrize("whole_bytes", [arrays.WHOLE_BYTES, 0], ids=["whole", "batches"])
def test_arrays_round_trip(tmp_path, monkeypatch, whole_bytes):
    """Small arrays come back in one fetch, large ones in record batches; both are exact."""
    monkeypatch.setattr(arrays, "WHOLE_BYTES", whole_bytes)
    monkeypatch.setattr(arrays, "BATCH_ROWS", 1000)  # several batches even for these sizes
    written = sample_arrays()
    con = duckdb.connect(str(tmp_path / "a.db"))
    arrays.write_arrays(con, written)
    assert arrays.stored_arrays(con) == set(written)
    for name, array in written.items():
        read = arrays.read_array(con, name)
        assert read.dtype == array.dtype and read.shape == array.shape, name
        assert np.array_equal(read, array), name
    assert arrays.array_strings(arrays.read_array(con, "names")) == [
        "alpha",
        "beta gamma",
        "",
        "δέλτα",
    ]
    with pytest.raises(KeyError):
        arrays.read_array(con, "missing")


@pytest.mark.parametrize("whole_bytes", [arrays.WHOLE_BYTES, 0], ids=["whole", "batches"])
def test_truncated_array_is_refused(tmp_path, monkeypatch, whole_bytes):
    """An array table that lost rows is an error, not a silently shorter array."""
    monkeypatch.setattr(arrays, "WHOLE_BYTES", whole_bytes)
    con = duckdb.connect(str(tmp_path / "a.db"))
    arrays.write_arrays(con, {"rows": np.arange(100, dtype=np.int32)})
    con.execute(f"DELETE FROM {arrays.PREFIX}rows WHERE value >= 90")
    with pytest.raises(ValueError, match="holds 90 of its 100 values"):
        arrays.read_array(con, "rows")


def test_small_arrays_do_not_load_pyarrow(tmp_path):
    """A small server reads its arrays without importing pyarrow (about 25 MB resident)."""
    database = tmp_path / "a.db"
    con = duckdb.connect(str(database))
    arrays.write_arrays(con, sample_arrays())
    con.close()
    probe = (
        "import sys, duckdb\n"
        f"sys.path.insert(0, {str(RUNTIME)!r})\n"
        "from docserve.arrays import read_array\n"
        f"con = duckdb.connect({str(database)!r}, read_only=True)\n"
        "assert read_array(con, 'vectors').shape == (300, 16)\n"
        "print('pyarrow' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
