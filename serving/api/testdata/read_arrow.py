"""Reads an Arrow IPC stream on stdin with pyarrow and prints it as JSON: the schema metadata,
the column types and the columns. serving/api/arrow_test.go compares it with the JSON API."""
import json
import sys

import pyarrow as pa

reader = pa.ipc.open_stream(sys.stdin.buffer.read())
table = reader.read_all()
meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
print(json.dumps({
    "metadata": meta,
    "types": {f.name: str(f.type) for f in table.schema},
    "columns": table.to_pydict(),
    "batches": len(table.to_batches()),
}))
