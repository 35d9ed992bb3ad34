// Package doccheck holds the tests that keep the documents true to the code: every test,
// benchmark and fuzz target and every file they name exists.
//
// In detail (DESIGN.md's file map has the line): the documents kept true to the code:
// every test, benchmark or fuzz target named in backquotes in README.md, DESIGN.md,
// BENCHMARKS.md or docs/ exists (`Name*` as a prefix, `Name{A,B}` expanded), and every
// repository file so named exists
package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root: two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// documents returns the Markdown files users and engineers read: the top-level ones and
// docs/, by path from the root.
func documents(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	read := func(rel string) {
		b, err := os.ReadFile(filepath.Join(root(t), rel))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = string(b)
	}
	for _, f := range []string{"README.md", "DESIGN.md", "BENCHMARKS.md", "infra/compose/README.md"} {
		read(f)
	}
	err := filepath.WalkDir(filepath.Join(root(t), "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root(t), path)
			read(rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testFuncs returns the names of every Test, Benchmark and Fuzz function in the repository.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir(root(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "data") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// expand expands one level of braces: TestUp{,Kafka} is TestUp and TestUpKafka.
func expand(s string) []string {
	open := strings.IndexByte(s, '{')
	end := strings.IndexByte(s, '}')
	if open < 0 || end < open {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[open+1:end], ",") {
		out = append(out, expand(s[:open]+alt+s[end+1:])...)
	}
	return out
}

// A name in backquotes: TestX, BenchmarkX/sub, FuzzX, TestUp{,Kafka}, TestCrash* (a prefix
// at least one function has); `-run`/`-bench` patterns are regular expressions, not names,
// and are left alone.
var cited = regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z][\\w{},]*)(\\*?)")

// TestDocsNameRealTests: every test, benchmark or fuzz target a document names in backquotes
// exists, so a guarantee's "tested by" never points at a test that was renamed or removed.
func TestDocsNameRealTests(t *testing.T) {
	names := testFuncs(t)
	if len(names) < 100 {
		t.Fatalf("found only %d test functions: the scan is broken", len(names))
	}
	for doc, text := range documents(t) {
		for _, m := range cited.FindAllStringSubmatch(text, -1) {
			for _, name := range expand(m[1]) {
				if m[2] == "*" && hasPrefix(names, name) {
					continue
				}
				if !names[name] {
					t.Errorf("%s names %s, which is no test, benchmark or fuzz function", doc, name)
				}
			}
		}
	}
}

func hasPrefix(names map[string]bool, prefix string) bool {
	for n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// A repository path in backquotes: a directory and a file with a known extension.
var citedPath = regexp.MustCompile("`((?:speed|batch|serving|archive|schemas|infra|cmd|internal|model|loadgen|accuracy|docs)/[\\w./-]+\\.(?:go|md|yaml|yml|sh|py|sql|json|proto))`")

var placeholder = regexp.MustCompile(`[A-Z]{3,}`)

// TestDocsNameRealFiles: every repository file a document names in backquotes exists.
func TestDocsNameRealFiles(t *testing.T) {
	for doc, text := range documents(t) {
		for _, m := range citedPath.FindAllStringSubmatch(text, -1) {
			if placeholder.MatchString(m[1]) || strings.HasPrefix(m[1], "archive/views/") {
				continue // a pattern (NNN_name.sql) or an object key in the bucket, not a file here
			}
			if _, err := os.Stat(filepath.Join(root(t), m[1])); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}
