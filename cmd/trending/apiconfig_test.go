package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOneAPIConfig: every API this package starts (serve's and up's) is configured by
// apiFlags.config, the one constructor of the API's configuration from the flags, so the two
// cannot drift apart again (up built its own from api.DefaultConfig and never followed --k).
// TestUpAndServeFollowK checks the same through the commands.
func TestOneAPIConfig(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		srcs[file] = string(b)
	}
	news, bad := apiConfigUses(t, srcs)
	if news < 2 {
		t.Errorf("%d calls of api.New found, want serve's and up's at least: the scan is broken", news)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestOneAPIConfigCatches: the scan behind TestOneAPIConfig finds an API configured by hand.
func TestOneAPIConfigCatches(t *testing.T) {
	src := `package main
func runX() {
	scfg := api.DefaultConfig()
	scfg.Addr = "x"
	srv, err := api.New(scfg, st, log)
}
func runY(af *apiFlags) {
	cfg, err := af.config(k, ws, nil, a)
	srv, err := api.New(cfg, st, log)
	d := api.DefaultConfigForK(3)
}
`
	news, bad := apiConfigUses(t, map[string]string{"x.go": src})
	want := []string{
		"x.go:runX: api.New(scfg): its configuration must come from apiFlags.config, the one constructor serve and up share",
		"x.go:runX: api.DefaultConfig() used as a configuration: build it with apiFlags.config",
		"x.go:runY: api.DefaultConfigForK outside apiFlags.config",
	}
	slices.Sort(want)
	if news != 2 || !slices.Equal(bad, want) {
		t.Errorf("%d api.New, findings:\n%s\nwant 2 and:\n%s", news, strings.Join(bad, "\n"), strings.Join(want, "\n"))
	}
}

// apiConfigUses scans the sources for how the API's configuration is built: how many calls
// of api.New there are, and every one whose configuration does not come from a call of a
// config method (apiFlags.config) in the same function, every api.DefaultConfig() taken
// whole outside addAPIFlags (reading one default, as api.DefaultConfig().Addr, is fine) and
// every api.DefaultConfigForK outside apiFlags.config.
func apiConfigUses(t *testing.T, srcs map[string]string) (news int, bad []string) {
	t.Helper()
	fset := token.NewFileSet()
	isAPI := func(e ast.Expr, name string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != name {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == "api"
	}
	for file, src := range srcs {
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			where := file + ":" + fd.Name.Name
			fromConfig := map[string]bool{} // variables assigned from a .config(...) call
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Rhs) != 1 {
					return true
				}
				if call, ok := as.Rhs[0].(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "config" {
						if id, ok := as.Lhs[0].(*ast.Ident); ok {
							fromConfig[id.Name] = true
						}
					}
				}
				return true
			})
			selected := map[*ast.CallExpr]bool{} // api.DefaultConfig().Field: one default read
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if call, ok := sel.X.(*ast.CallExpr); ok {
						selected[call] = true
					}
				}
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch {
				case isAPI(call.Fun, "New"):
					news++
					id, ok := call.Args[0].(*ast.Ident)
					if !ok || !fromConfig[id.Name] {
						arg := "?"
						if ok {
							arg = id.Name
						}
						bad = append(bad, where+": api.New("+arg+"): its configuration must come from apiFlags.config, the one constructor serve and up share")
					}
				case isAPI(call.Fun, "DefaultConfig") && !selected[call] && fd.Name.Name != "addAPIFlags":
					bad = append(bad, where+": api.DefaultConfig() used as a configuration: build it with apiFlags.config")
				case isAPI(call.Fun, "DefaultConfigForK") && fd.Name.Name != "config":
					bad = append(bad, where+": api.DefaultConfigForK outside apiFlags.config")
				}
				return true
			})
		}
	}
	slices.Sort(bad)
	return news, bad
}
