package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// periodFile is the one file that may switch on the periods (by constant, as it happens).
const periodFile = "model/period.go"

// periodCases returns "file:line: case \"week\"" for each switch case in src whose value is
// a period's name as a string literal.
func periodCases(t *testing.T, fset *token.FileSet, name string, src []byte) []string {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		for _, e := range cc.List {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && Period(s).Valid() {
				out = append(out, fset.Position(lit.Pos()).String()+": case "+lit.Value)
			}
		}
		return true
	})
	return out
}

// TestNoSwitchOnPeriodNames: a calendar period's rules are Period's methods; no package
// switches on "hour", "day", "week" or "month" (issue 29: adding decayed windows touched 22
// files in 11 packages, several for such switches). Use a Period and its methods, or add one.
func TestNoSwitchOnPeriodNames(t *testing.T) {
	fset := token.NewFileSet()
	if got := periodCases(t, fset, "probe.go", []byte("package p\nfunc f(s string) int {\n\tswitch s {\n\tcase \"a\", \"week\":\n\t\treturn 1\n\t}\n\treturn 0\n}\n")); len(got) != 1 {
		t.Fatalf("the check does not see a switch on \"week\": %v", got)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	files, sawPeriod := 0, false
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		if rel == periodFile {
			sawPeriod = true
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, c := range periodCases(t, fset, rel, src) {
			t.Errorf("%s: a switch on a calendar period's name; use model.Period's methods (%s)", c, periodFile)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || !sawPeriod {
		t.Fatalf("walked %d Go files under %s (saw %s: %v): not the module", files, root, periodFile, sawPeriod)
	}
}
