package deploytest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestAirflowDAG loads infra/airflow/trending_nightly.py with python3 (Airflow itself is not
// needed: the commands are module-level data) and checks every task's command against the
// binary, as for compose and Kubernetes: a runnable subcommand, flags that exist with valid
// values, and environment variables the configuration reads.
func TestAirflowDAG(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dag := filepath.Join(root(t), "infra", "airflow", "trending_nightly.py")
	script := `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("dag", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print(json.dumps({"nightly": m.NIGHTLY_ARGS, "backfill": m.BACKFILL_ARGS, "env": m.ENV}))`
	out, err := exec.Command(py, "-c", script, dag).CombinedOutput()
	if err != nil {
		t.Fatalf("load the DAG: %v\n%s", err, out)
	}
	var d struct {
		Nightly, Backfill, Env []string
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("DAG data: %v\n%s", err, out)
	}
	if !slices.Equal(d.Nightly[:2], []string{"batch", "nightly"}) || !slices.Equal(d.Backfill[:2], []string{"batch", "backfill"}) {
		t.Fatalf("tasks run %v and %v, want batch nightly and batch backfill", d.Nightly[:2], d.Backfill[:2])
	}
	// The templated parts Airflow appends, with sample values.
	checkContainer(t, "airflow trending_nightly", append(d.Nightly, "--date", "2026-11-14"), d.Env)
	checkContainer(t, "airflow trending_backfill", append(d.Backfill, "--from", "2026-11-01", "--to", "2026-11-07"), d.Env)
}
