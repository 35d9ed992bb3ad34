#!/usr/bin/env python3
"""Exact views per item for one UTC hour, read straight from trending's Parquet archive.

Usage:
  archive_counts.py --endpoint http://127.0.0.1:39000 --bucket trending \
      --access-key trending --secret-key trending-secret --hour 2026-11-14T10

Reads archive/views/dt=YYYY-MM-DD/hour=HH/ with pyarrow.dataset (hive partitioning over
dt= and hour=), keeps each (kafka_partition, kafka_offset) once -- a retried upload or a roll
repeated after a crash writes the same event into two files -- and sums count per item_id.
Prints one JSON object {item_id: views}, the same numbers the batch layer computes.
Without --endpoint it reads a local copy of the bucket (--root DIR, the folder holding
archive/).
"""
import argparse
import json

import pyarrow.dataset as ds
import pyarrow.fs as pafs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoint", help="S3 endpoint URL (MinIO); omit for --root")
    ap.add_argument("--bucket", default="trending")
    ap.add_argument("--access-key", default="")
    ap.add_argument("--secret-key", default="")
    ap.add_argument("--root", help="a local folder holding archive/ (a copy of the bucket)")
    ap.add_argument("--hour", required=True, help="UTC hour, e.g. 2026-11-14T10")
    a = ap.parse_args()

    day, hour = a.hour[:10], a.hour[11:13]
    if a.endpoint:
        scheme, host = a.endpoint.split("://", 1)
        fs = pafs.S3FileSystem(endpoint_override=host, scheme=scheme, access_key=a.access_key,
                               secret_key=a.secret_key, region="us-east-1")
        base = f"{a.bucket}/archive/views/dt={day}/hour={hour}"
    else:
        fs = pafs.LocalFileSystem()
        base = f"{a.root}/archive/views/dt={day}/hour={hour}"

    # Hive partitioning gives dt and hour as columns; only the .parquet objects are data.
    files = [f.path for f in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
             if f.path.endswith(".parquet")]
    if not files:
        print("{}")
        return
    data = ds.dataset(files, filesystem=fs, format="parquet",
                      partitioning=ds.partitioning(flavor="hive"))
    t = data.to_table(columns=["item_id", "count", "kafka_partition", "kafka_offset"])

    # Deduplicate by (kafka_partition, kafka_offset): never sum(count) over the raw files.
    t = t.group_by(["kafka_partition", "kafka_offset"]).aggregate(
        [("item_id", "min"), ("count", "min")])
    per_item = t.group_by("item_id_min").aggregate([("count_min", "sum")])
    out = {k: int(v) for k, v in zip(per_item["item_id_min"].to_pylist(), per_item["count_min_sum"].to_pylist())}
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
