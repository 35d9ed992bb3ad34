"""Airflow DAG: trending's nightly exact recompute.

Every night at 00:30 UTC it runs `trending batch nightly --date {{ ds }}`: the hours and the
day just closed, the month to date, all time, and every earlier closed window whose archived
inputs changed (late data). The run is idempotent, so Airflow's retries and a manual rerun of
any date are safe; a rerun leaves the same tables.

Analysts' backfills use the second task's pattern from the Airflow UI ("trigger with config":
{"from": "2026-11-01", "to": "2026-11-07"}), or `trending batch backfill` from a shell.

The commands are kept as data (NIGHTLY_ARGS, BACKFILL_ARGS, ENV) so infra/deploytest checks
every subcommand and flag against the binary; this file imports Airflow only to build the DAG.
Credentials come from the worker's environment (an Airflow connection or a Kubernetes Secret
mapped to TRENDING_CLICKHOUSE_PASSWORD; S3 through the AWS default chain), never from here.
"""

import shlex
from datetime import datetime, timedelta

TRENDING = "trending"  # the binary on the Airflow worker's PATH (or the image's entrypoint)

NIGHTLY_ARGS = [
    "batch", "nightly",
    "--clickhouse", "clickhouse://clickhouse:9000/trending",
    "--store", "clickhouse://clickhouse:9000/trending",
    "--s3-endpoint", "", "--s3-access-key", "", "--s3-bucket", "trending",
    "--partitions", "32",
    "--lookback-days", "35",
    "--log-format", "json",
]

BACKFILL_ARGS = [
    "batch", "backfill",
    "--clickhouse", "clickhouse://clickhouse:9000/trending",
    "--store", "clickhouse://clickhouse:9000/trending",
    "--s3-endpoint", "", "--s3-access-key", "", "--s3-bucket", "trending",
    "--parallel", "2",
    "--log-format", "json",
]

# Variables the tasks read from the worker's environment. TRENDING_WINDOWS_FILE is the window
# set (and lists per group) the speed layer and the API serve: the batch must recompute the
# same windows, so point it at the same file (infra/k8s/windows/windows.yaml); unset, the batch
# recomputes the default set.
ENV = ["TRENDING_CLICKHOUSE_PASSWORD", "TRENDING_CLICKHOUSE_USER", "TRENDING_WINDOWS_FILE"]


def command(args, *extra):
    return " ".join(shlex.quote(a) for a in [TRENDING, *args, *extra])


try:  # Airflow is only on the scheduler and workers, not where the checks run.
    from airflow import DAG
    from airflow.operators.bash import BashOperator
except ImportError:  # pragma: no cover
    DAG = None

if DAG is not None:
    default_args = {"retries": 3, "retry_delay": timedelta(minutes=10), "retry_exponential_backoff": True}
    with DAG(
        dag_id="trending_nightly",
        schedule="30 0 * * *",
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        default_args=default_args,
        tags=["trending"],
    ) as nightly:
        BashOperator(task_id="nightly", bash_command=command(NIGHTLY_ARGS) + " --date {{ ds }}")

    with DAG(
        dag_id="trending_backfill",
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        params={"from": "", "to": ""},
        tags=["trending"],
    ) as backfill:
        BashOperator(
            task_id="backfill",
            bash_command=command(BACKFILL_ARGS) + " --from {{ params['from'] }} --to {{ params['to'] }}",
        )
