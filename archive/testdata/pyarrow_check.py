#!/usr/bin/env python3
"""Read one archive Parquet file with pyarrow and print what Go checks against its own read.

Usage: pyarrow_check.py FILE

Prints one JSON object: rows, the columns with their Arrow types, a SHA-256 over the rows
in file order (one line per row: item_id, count, ts ms, region, kafka_partition,
kafka_offset, ingest_ts ms, tab-separated, newline-terminated), whether every row group
has min/max statistics for ts, the declared sorting columns and the key/value metadata.
Used by archive's TestPyarrowReadsOurFiles; a second implementation reading our files is
the check that they are Parquet and not just what parquet-go reads back.
"""
import hashlib
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def main(path):
    pf = pq.ParquetFile(path)
    table = pf.read()
    cols = {name: table.column(name) for name in table.column_names}
    as_int = lambda name: cols[name].cast(pa.int64()).to_pylist()
    item, count, region = cols["item_id"].to_pylist(), cols["count"].to_pylist(), cols["region"].to_pylist()
    ts, part, off, ingest = as_int("ts"), as_int("kafka_partition"), as_int("kafka_offset"), as_int("ingest_ts")
    h = hashlib.sha256()
    for i in range(table.num_rows):
        h.update(f"{item[i]}\t{count[i]}\t{ts[i]}\t{region[i]}\t{part[i]}\t{off[i]}\t{ingest[i]}\n".encode())
    md = pf.metadata
    ts_idx = table.column_names.index("ts")
    stats = all(
        md.row_group(g).column(ts_idx).statistics is not None
        and md.row_group(g).column(ts_idx).statistics.has_min_max
        for g in range(md.num_row_groups)
    )
    sorting = []
    rg0 = md.row_group(0)
    if getattr(rg0, "sorting_columns", None):
        sorting = [table.column_names[c.column_index] for c in rg0.sorting_columns]
    kv = {k.decode(): v.decode() for k, v in (md.metadata or {}).items() if k.decode().startswith("trending.")}
    print(json.dumps({
        "rows": table.num_rows,
        "row_groups": md.num_row_groups,
        "columns": [[f.name, str(f.type)] for f in table.schema],
        "checksum": h.hexdigest(),
        "ts_stats": stats,
        "sorting": sorting,
        "metadata": kv,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
