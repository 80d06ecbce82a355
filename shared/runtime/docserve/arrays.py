"""Numpy arrays kept inside the database, so the file stays the one artefact a server needs.

Each array is a table ``search_array_NAME`` with one flat typed column holding its values in
order (its dtype and shape in the table's comment), written straight from numpy: a scan of a plain
column, which DuckDB reads fast and hands over without per-value conversion. A small array is
fetched whole; a large one (the vectors of a big corpus) streams in Arrow record batches into one
preallocated array, so no second copy of it is ever held and small servers never load pyarrow.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np

PREFIX = "search_array_"
BATCH_ROWS = 1 << 20
WHOLE_BYTES = 256 << 20  # arrays up to this size are fetched in one piece


def write_arrays(con: duckdb.DuckDBPyConnection, arrays: dict[str, np.ndarray]) -> None:
    """Store ``arrays``, replacing any of the same names."""
    for name, array in arrays.items():
        staged = {"value": np.ascontiguousarray(array).reshape(-1)}  # noqa: F841
        con.execute(f"CREATE OR REPLACE TABLE {PREFIX}{name} AS SELECT value FROM staged")
        shape = json.dumps({"dtype": array.dtype.str, "shape": list(array.shape)})
        con.execute(f"COMMENT ON TABLE {PREFIX}{name} IS '{shape}'")


def stored_arrays(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of the arrays the database holds."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, ?) "
        "AND database_name = current_database()",
        [PREFIX],
    ).fetchall()
    return {name.removeprefix(PREFIX) for (name,) in rows}


def read_array(con: duckdb.DuckDBPyConnection, name: str) -> np.ndarray:
    """The array ``name``; raises KeyError when the database does not hold it."""
    found = con.execute(
        "SELECT comment FROM duckdb_tables() WHERE table_name = ? "
        "AND database_name = current_database()",
        [PREFIX + name],
    ).fetchone()
    if found is None:
        raise KeyError(name)
    described = json.loads(found[0])
    dtype, shape = np.dtype(described["dtype"]), described["shape"]
    size = int(np.prod(shape))
    result = con.execute(f"SELECT value FROM {PREFIX}{name}")
    if size * dtype.itemsize <= WHOLE_BYTES:
        flat = result.fetchnumpy()["value"].astype(dtype, copy=False)
        filled = flat.size
    else:
        flat = np.empty(size, dtype=dtype)
        filled = 0
        for batch in result.fetch_record_batch(BATCH_ROWS):
            values = batch.column(0).to_numpy(zero_copy_only=False)
            flat[filled : filled + len(values)] = values
            filled += len(values)
    if filled != size:
        raise ValueError(f"array {name!r} holds {filled} of its {size} values")
    return flat.reshape(shape)


def strings_array(strings: list[str]) -> np.ndarray:
    """``strings`` (none holding a newline) as one UTF-8 byte array."""
    return np.frombuffer("\n".join(strings).encode(), dtype=np.uint8)


def array_strings(array: np.ndarray) -> list[str]:
    """The strings :func:`strings_array` stored."""
    return array.tobytes().decode().split("\n") if len(array) else []
