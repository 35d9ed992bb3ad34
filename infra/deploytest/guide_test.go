package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScaleOutGuideQuotesPlan checks that docs/scale-out.md quotes `trending plan` as the
// binary prints it today: the guide's numbers are the plan's, and a change to the plan's
// arithmetic shows up here instead of leaving the guide stale.
func TestScaleOutGuideQuotesPlan(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "docs", "scale-out.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```\n\\$ (trending plan [^\n\\\\]*(?:\\\\\n[^\n]*)*)\n(.*?)```").FindStringSubmatch(string(raw))
	if block == nil {
		t.Fatal("docs/scale-out.md quotes no `$ trending plan ...` block")
	}
	args := strings.Fields(strings.ReplaceAll(block[1], "\\\n", " "))[1:]
	for i, a := range args {
		if i > 0 && args[i-1] == "--windows-file" {
			args[i] = filepath.Join(root(t), a) // the guide's path is from the repository's root
		}
	}
	got := runBin(t, args...)
	if strings.TrimSpace(got) != strings.TrimSpace(block[2]) {
		t.Fatalf("docs/scale-out.md quotes a plan that differs from `trending %s` now; update the guide:\n%s", strings.Join(args, " "), got)
	}
}
