"""Numpy arrays kept inside the database, so the file stays the one artefact a server needs.

Each array is a table ``search_array_NAME`` with one flat typed column holding its values in
order (its dtype and shape in the table's comment), written from numpy through Arrow and read back
batch by batch into one preallocated array: a scan of a plain column, which DuckDB reads fast and
hands over without per-value conversion, and no second copy of the array in memory.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa

PREFIX = "search_array_"
BATCH_ROWS = 1 << 20


def write_arrays(con: duckdb.DuckDBPyConnection, arrays: dict[str, np.ndarray]) -> None:
    """Store ``arrays``, replacing any of the same names."""
    for name, array in arrays.items():
        staged = pa.table({"value": np.ascontiguousarray(array).reshape(-1)})  # noqa: F841
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
    array = np.empty(described["shape"], dtype=np.dtype(described["dtype"]))
    flat = array.reshape(-1)
    filled = 0
    reader = con.execute(f"SELECT value FROM {PREFIX}{name}").fetch_record_batch(BATCH_ROWS)
    for batch in reader:
        values = batch.column(0).to_numpy(zero_copy_only=False)
        flat[filled : filled + len(values)] = values
        filled += len(values)
    if filled != flat.size:
        raise ValueError(f"array {name!r} holds {filled} of its {flat.size} values")
    return array


def strings_array(strings: list[str]) -> np.ndarray:
    """``strings`` (none holding a newline) as one UTF-8 byte array."""
    return np.frombuffer("\n".join(strings).encode(), dtype=np.uint8)


def array_strings(array: np.ndarray) -> list[str]:
    """The strings :func:`strings_array` stored."""
    return array.tobytes().decode().split("\n") if len(array) else []
