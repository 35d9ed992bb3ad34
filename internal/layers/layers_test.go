// Package layers holds the test that keeps the architecture's import rule: between the top
// layers (speed, archive, batch, serving, the tools) imports flow only through the shared
// model, internal/*, and the two contracts between layers: serving/store for its two
// writers (the merger and the batch) and the archive's reader for the batch; and the floor
// rule: the model (model/...) imports only the model, the standard library and the few
// libraries and I/O-free leaves listed in modelMayImport, in its tests too.
//
// In detail (DESIGN.md's file map has the line): the import rule as a test (`go list` over
// the module): between speed, archive, batch, serving and the tools only the model,
// `internal/*`, `serving/store` (for the merger and the batch) and `archive` (for the
// batch); a wrong import fails it, naming the pair; `TestImportRuleTests`: the same over
// the test files' imports, with the end-to-end tests' existing cross-layer imports listed
// (`pendingInTests`, which only shrinks); `TestModelImports`: the model (`model/...`, its
// test files too) imports only the model, the standard library (its code none of the I/O
// packages: `os`, `net`, ...) and `modelMayImport` (two libraries, and `internal/setting`
// and `schemas`, checked to stay standard-library-only leaves)
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
	graph := listGraph(t, false)
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

// pendingInTests are the cross-layer imports of test files (graph edges with the tests'
// imports, beyond those of the code): end-to-end tests that stand up a merger and a store
// beside the layer they test. Each is refused in code; in tests they are listed here so that
// no new one appears unnoticed, and the list only shrinks (a removed one fails the test
// until it is taken off).
var pendingInTests = []string{
	module + "batch -> " + module + "serving/store/bolt",
	module + "batch -> " + module + "serving/store/clickhouse",
	module + "batch -> " + module + "speed/merge",
	module + "batch -> " + module + "speed/sketch",
	module + "batch -> " + module + "speed/window",
	module + "speed/merge -> " + module + "serving/store/bolt",
	module + "speed/worker -> " + module + "serving/api",
	module + "speed/worker -> " + module + "serving/store",
	module + "speed/worker -> " + module + "serving/store/bolt",
}

// TestImportRuleTests: the import rule over the test files' imports too, with the test-only
// edges of pendingInTests allowed (and required to still exist).
func TestImportRuleTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	got := violations(listGraph(t, true))
	for _, v := range got {
		if !slices.Contains(pending, v) && !slices.Contains(pendingInTests, v) {
			t.Errorf("import not allowed between layers, in a test: %s (use the model, internal/*, or the contracts; see ARCHITECTURE.md)", v)
		}
	}
	for _, p := range pendingInTests {
		if !slices.Contains(got, p) {
			t.Errorf("pending test import %s is gone: remove it from pendingInTests", p)
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

// modelMayImport is what a model package (model/...) may import besides the standard
// library and other model packages: the floor does no I/O and links nothing that does.
// In-module entries must themselves import only the standard library (TestModelImports
// checks it), so an allowance cannot pull anything in behind it.
var modelMayImport = map[string]string{
	"github.com/goccy/go-json":  "the list encoding's JSON",
	"gopkg.in/yaml.v3":          "window-set files",
	module + "internal/setting": "setting errors by field name (stdlib only)",
	module + "schemas":          "the embedded schema files the event tests check against (embed only)",
}

// ioPackages are the standard library's doors to files, the network and processes: the
// model's code (not its tests, which read testdata) imports none of them.
var ioPackages = []string{"os", "os/exec", "net", "net/http", "syscall", "database/sql", "io/ioutil", "plugin"}

// modelIO returns "from -> to" for every import of ioPackages by a model package, sorted.
func modelIO(graph map[string][]string) []string {
	var out []string
	for from, tos := range graph {
		if from != module+"model" && !strings.HasPrefix(from, module+"model/") {
			continue
		}
		for _, to := range tos {
			if slices.Contains(ioPackages, to) {
				out = append(out, from+" -> "+to)
			}
		}
	}
	slices.Sort(out)
	return out
}

// stdlib reports whether an import path is the standard library's: no dot in its first
// element (the module's own paths start with "trending/").
func stdlib(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".") && first != strings.TrimSuffix(module, "/")
}

// modelViolations returns "from -> to" for every import of a model package (its tests'
// included: graph holds them) that modelMayImport does not allow, sorted.
func modelViolations(graph map[string][]string) []string {
	var out []string
	for from, tos := range graph {
		if from != module+"model" && !strings.HasPrefix(from, module+"model/") {
			continue
		}
		for _, to := range tos {
			switch {
			case stdlib(to), to == module+"model", strings.HasPrefix(to, module+"model/"):
			case modelMayImport[to] != "":
			default:
				out = append(out, from+" -> "+to)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listGraph runs go list over the module: each package's imports, with its tests' imports
// (internal and external test packages) when tests is set.
func listGraph(t *testing.T, tests bool) map[string][]string {
	t.Helper()
	f := "{{.ImportPath}} {{join .Imports \" \"}}"
	if tests {
		f += " {{join .TestImports \" \"}} {{join .XTestImports \" \"}}"
	}
	out, err := exec.Command("go", "list", "-f", f, "trending/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		graph[f[0]] = f[1:]
	}
	return graph
}

// TestModelImports: the model imports only the model, the standard library and
// modelMayImport, in its tests too (Issue 29: the model does no I/O); and every in-module
// allowance stays a standard-library-only leaf.
func TestModelImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	graph := listGraph(t, true)
	for _, v := range modelViolations(graph) {
		t.Errorf("model import not allowed: %s (the model does no I/O: move the code that needs it out of model/, see ARCHITECTURE.md)", v)
	}
	for _, v := range modelIO(listGraph(t, false)) {
		t.Errorf("model code imports an I/O package: %s (files, network and processes belong outside model/, e.g. internal/topicstore)", v)
	}
	for pkg := range modelMayImport {
		if !strings.HasPrefix(pkg, module) {
			continue
		}
		if _, ok := graph[pkg]; !ok {
			t.Errorf("modelMayImport names %s, which go list does not know: remove it", pkg)
		}
		// Its own imports only (graph holds its tests' too, which may use anything).
		out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, to := range strings.Fields(string(out)) {
			if !stdlib(to) {
				t.Errorf("%s, which the model may import, imports %s: it must stay a standard-library-only leaf", pkg, to)
			}
		}
	}
}

// TestModelImportsCatches: the floor rule refuses a model package's I/O import, in a test
// file as well (the graph's edges include test imports), and allows the rest.
func TestModelImportsCatches(t *testing.T) {
	graph := map[string][]string{
		module + "model/topicrules": {"fmt", module + "internal/setting", module + "internal/objstore"},
		module + "model/event":      {module + "model", module + "schemas", "github.com/aws/aws-sdk-go-v2/service/s3"},
		module + "model":            {"github.com/goccy/go-json", "encoding/json"},
		module + "speed/topics":     {module + "internal/objstore"},
	}
	want := []string{
		module + "model/event -> github.com/aws/aws-sdk-go-v2/service/s3",
		module + "model/topicrules -> " + module + "internal/objstore",
	}
	if got := modelViolations(graph); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("model violations %v, want %v", got, want)
	}
	graph[module+"model/topicrules"] = append(graph[module+"model/topicrules"], "os")
	if got, want := modelIO(graph), []string{module + "model/topicrules -> os"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("model I/O %v, want %v", got, want)
	}
}
