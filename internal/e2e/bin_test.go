package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"trending/internal/itest"
)

// The binary is built once per test process and shared by the tests that run it as child
// processes (about 15 s a build on 2 cores).
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	itest.WatchMemory(8)
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary returns the path of the built `trending`, building it on first use.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		start := time.Now()
		if binDir, binErr = os.MkdirTemp("", "trending-e2e-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "trending")
		if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/trending").CombinedOutput(); err != nil {
			binErr = &buildError{err, out}
			return
		}
		t.Logf("built the binary in %s", time.Since(start).Round(100*time.Millisecond))
	})
	if binErr != nil {
		t.Fatalf("build: %v", binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }
