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

// periodConsts are the packages whose constants name the periods, by import path: model's
// Period values and the batch's levels (all time, "All", is a level too).
var periodConsts = map[string][]string{
	"trending/model": {"Hour", "Day", "Week", "Month"},
	"trending/batch": {"Hour", "Day", "Week", "Month", "All"},
}

// periodCases returns "file:line: case \"week\"" for each switch case in src whose value is
// a period's name: a string literal, or a constant of periodConsts (model.Week, batch.All,
// or Week inside the package declaring it).
func periodCases(t *testing.T, fset *token.FileSet, name string, src []byte) []string {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	// The constants by the name this file calls them: "model.Week" (or its import's local
	// name), "Week" in the file's own package.
	consts := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		local := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		for _, c := range periodConsts[path] {
			consts[local+"."+c] = true
		}
	}
	for path, cs := range periodConsts {
		if strings.HasSuffix(path, "/"+f.Name.Name) {
			for _, c := range cs {
				consts[c] = true
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		for _, e := range cc.List {
			switch e := e.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING && Period(s).Valid() {
					out = append(out, fset.Position(e.Pos()).String()+": case "+e.Value)
				}
			case *ast.Ident:
				if consts[e.Name] {
					out = append(out, fset.Position(e.Pos()).String()+": case "+e.Name)
				}
			case *ast.SelectorExpr:
				if x, ok := e.X.(*ast.Ident); ok && consts[x.Name+"."+e.Sel.Name] {
					out = append(out, fset.Position(e.Pos()).String()+": case "+x.Name+"."+e.Sel.Name)
				}
			}
		}
		return true
	})
	return out
}

// TestNoSwitchOnPeriodNames: a calendar period's rules are Period's methods; no package
// switches on "hour", "day", "week" or "month", nor on their constants (model.Week, the
// batch's levels Week and All: a level's rules are its row of batch/level.go) (issue 29:
// adding decayed windows touched 22 files in 11 packages, several for such switches). Use a
// Period and its methods, or add one; in the batch, a field of the level's row.
func TestNoSwitchOnPeriodNames(t *testing.T) {
	fset := token.NewFileSet()
	for _, probe := range []struct{ name, src string }{
		{"a string literal", "package p\nfunc f(s string) int {\n\tswitch s {\n\tcase \"a\", \"week\":\n\t\treturn 1\n\t}\n\treturn 0\n}\n"},
		{"model's constant", "package p\nimport \"trending/model\"\nfunc f(p model.Period) int {\n\tswitch p {\n\tcase model.Week:\n\t\treturn 1\n\t}\n\treturn 0\n}\n"},
		{"model's constant, renamed", "package p\nimport m \"trending/model\"\nfunc f(p m.Period) int {\n\tswitch p {\n\tcase m.Month:\n\t\treturn 1\n\t}\n\treturn 0\n}\n"},
		{"the batch's level, inside batch", "package batch\nfunc f(l string) int {\n\tswitch l {\n\tcase All:\n\t\treturn 1\n\t}\n\treturn 0\n}\n"},
		{"the batch's level, outside", "package p\nimport \"trending/batch\"\nfunc f(l string) int {\n\tswitch l {\n\tcase batch.Day:\n\t\treturn 1\n\t}\n\treturn 0\n}\n"},
	} {
		if got := periodCases(t, fset, "probe.go", []byte(probe.src)); len(got) != 1 {
			t.Fatalf("the check does not see a switch on %s: %v", probe.name, got)
		}
	}
	if got := periodCases(t, fset, "probe.go", []byte("package p\nimport \"time\"\nfunc f(d time.Duration) int {\n\tswitch d {\n\tcase time.Hour:\n\t\treturn 1\n\t}\n\treturn 0\n}\n")); len(got) != 0 {
		t.Fatalf("the check reports a switch on time.Hour: %v", got)
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
			t.Errorf("%s: a switch on a calendar period's name; use model.Period's methods (%s) or, in the batch, its level's row (batch/level.go)", c, periodFile)
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
