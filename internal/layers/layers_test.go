// Package layers holds the test that keeps the architecture's import rule: between the top
// layers (speed, archive, batch, serving, the tools) imports flow only through the shared
// model, internal/*, and the two contracts between layers: serving/store for its two
// writers (the merger and the batch) and the archive's reader for the batch.
//
// In detail (DESIGN.md's file map has the line): the import rule as a test (`go
// list` over the module): between speed, archive, batch, serving and the tools only the
// model, `internal/*`, `serving/store` (for the merger and the batch) and `archive` (for
// the batch); a wrong import fails it, naming the pair
package layers

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "trending/"

// layerOf returns the top layer a package belongs to, or "" for packages outside the rule
// (cmd, internal, schemas, infra, the model).
func layerOf(pkg string) string {
	p, ok := strings.CutPrefix(pkg, module)
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(p, "/")
	switch top {
	case "speed", "archive", "batch", "serving", "loadgen", "accuracy":
		return top
	}
	return ""
}

// allowed reports whether from may import to across layers.
func allowed(from, to string) bool {
	switch {
	case layerOf(from) == "" || layerOf(to) == "" || layerOf(from) == layerOf(to):
		return true
	case to == module+"serving/store":
		// The serving table's contract, for its two writers.
		return from == module+"speed/merge" || strings.HasPrefix(from, module+"batch")
	case to == module+"archive":
		// The archive's reader, for the batch.
		return strings.HasPrefix(from, module+"batch")
	}
	return false
}

// violations returns "from -> to" for every import graph edge the rule refuses, sorted.
func violations(graph map[string][]string) []string {
	var out []string
	for from, tos := range graph {
		for _, to := range tos {
			if strings.HasPrefix(to, module) && !allowed(from, to) {
				out = append(out, from+" -> "+to)
			}
		}
	}
	slices.Sort(out)
	return out
}

// pending are the imports the redesign has still to remove; each is a violation today. The
// test fails on any other violation, and on a pending one that is gone (remove it here), so
// the list only shrinks.
var pending = []string{}

func TestImportRule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "trending/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		graph[f[0]] = f[1:]
	}
	got := violations(graph)
	for _, v := range got {
		if !slices.Contains(pending, v) {
			t.Errorf("import not allowed between layers: %s (use the model, internal/*, or the contracts serving/store and archive; see ARCHITECTURE.md)", v)
		}
	}
	for _, p := range pending {
		if !slices.Contains(got, p) {
			t.Errorf("pending violation %s is gone: remove it from the pending list", p)
		}
	}
}

// TestImportRuleCatches: the rule refuses a deliberately wrong import and allows the
// contracts.
func TestImportRuleCatches(t *testing.T) {
	graph := map[string][]string{
		module + "speed/worker": {module + "serving/store", module + "model", module + "internal/eventlog", "fmt"},
		module + "speed/merge":  {module + "serving/store"},
		module + "batch":        {module + "archive", module + "serving/store"},
		module + "serving/api":  {module + "speed/topics"},
		module + "archive":      {module + "speed/event"},
		module + "loadgen":      {module + "loadgen/zipf"},
		module + "cmd/trending": {module + "speed/worker", module + "batch"},
	}
	want := []string{
		module + "archive -> " + module + "speed/event",
		module + "serving/api -> " + module + "speed/topics",
		module + "speed/worker -> " + module + "serving/store",
	}
	if got := violations(graph); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("violations %v, want %v", got, want)
	}
}

// TestContractLinksNoDriver: the serving store's contract (serving/store) is apart from its
// backends (serving/store/bolt, serving/store/clickhouse), so its importers link no database
// driver they do not use: the merger writes through the contract, and only the command that
// opens a store picks its backend.
func TestContractLinksNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	for _, pkg := range []string{"serving/store", "speed/merge", "serving/api", "serving/ingest"} {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/ClickHouse/clickhouse-go") || strings.HasPrefix(dep, "go.etcd.io/bbolt") {
				t.Errorf("%s links %s: the store's contract must not pull in a backend's driver", pkg, dep)
				break
			}
		}
	}
}
