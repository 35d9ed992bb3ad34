package itest

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// servers are the local servers a fault test may stop: the name infra/local/services.sh
// takes, and the environment variable that says where the tests reach it.
var servers = map[string]string{"kafka": EnvKafka, "minio": EnvS3, "clickhouse": EnvClickHouse}

// script is infra/local/services.sh of this source tree.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "infra", "local", "services.sh")
}

// managed reports whether the address the tests use for name is the one services.sh runs
// (a test cannot stop a server somebody else runs, such as a CI service container).
// Faults skips a test that stops a shared server unless it runs in make test's fault phase
// (EnvFaults, one package at a time), and fails one not named TestFault..., which that phase
// would never run. Call it first, before any setup, from the test's own goroutine.
func Faults(t testing.TB) {
	t.Helper()
	if top, _, _ := strings.Cut(t.Name(), "/"); !strings.HasPrefix(top, "TestFault") {
		t.Fatalf("itest: %s stops a shared server: name it TestFault... so make test runs it in its fault phase", top)
	}
	if os.Getenv(EnvFaults) == "" {
		t.Skipf("itest: stops a shared server: runs in make test's fault phase (%s=1, go test -p 1 -run '^TestFault'), not beside other packages' tests", EnvFaults)
	}
}

func managed(t testing.TB, name string) {
	t.Helper()
	env, ok := servers[name]
	if !ok {
		t.Fatalf("itest: no server %q; want kafka, minio or clickhouse", name)
	}
	Faults(t)
	switch name { // the gate: unset skips, unreachable fails
	case "kafka":
		Kafka(t)
	case "minio":
		S3(t)
	case "clickhouse":
		ClickHouse(t)
	}
	out, err := exec.Command(script(), "env").Output()
	if err != nil {
		t.Fatalf("itest: %s env: %v", script(), err)
	}
	want := "export " + env + "=" + os.Getenv(env) + "\n"
	if !bytes.Contains(out, []byte(want)) {
		t.Skipf("itest: %s=%s is not the server infra/local/services.sh runs; cannot stop it", env, os.Getenv(env))
	}
}

// one stop or start at a time in this process; the script serializes across processes.
var serversMu sync.Mutex

func services(t testing.TB, verb, name string) {
	t.Helper()
	serversMu.Lock()
	defer serversMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, script(), verb, name).CombinedOutput()
	if err != nil {
		t.Fatalf("itest: services.sh %s %s: %v\n%s", verb, name, err, out)
	}
	t.Logf("itest: %s %s in %v: %s", verb, name, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
}

// Stop stops the local server name ("kafka", "minio" or "clickhouse") with
// `infra/local/services.sh stop NAME` (SIGTERM: a clean shutdown, which ClickHouse with
// clients connected takes about 10 s over), gated like the accessors (unset skips,
// unreachable fails; a server that script does not run skips). It registers a Cleanup that
// starts the server again, so a test that stops a server always restarts it, failed or not;
// Start within the test is the same restart, and the Cleanup's then finds it running.
//
// Other tests using the server meanwhile see it down: a test that stops a server must not
// run in parallel with tests of its package that use it.
func Stop(t testing.TB, name string) { t.Helper(); down(t, "stop", name) }

// Kill is Stop with SIGKILL: the server crashes, nothing flushed or shut down, at once.
func Kill(t testing.TB, name string) { t.Helper(); down(t, "kill", name) }

func down(t testing.TB, verb, name string) {
	t.Helper()
	managed(t, name)
	t.Cleanup(func() { services(t, "start", name) })
	services(t, verb, name)
}

// Start starts the local server name again after Stop (`services.sh start NAME`: the same
// ports and data directory) and returns once it is healthy.
func Start(t testing.TB, name string) {
	t.Helper()
	if _, ok := servers[name]; !ok {
		t.Fatalf("itest: no server %q; want kafka, minio or clickhouse", name)
	}
	services(t, "start", name)
	if name == "minio" { // the gates dial the host, not the URL
		u, _ := url.Parse(os.Getenv(EnvS3))
		reachable(t, EnvS3, u.Host)
		return
	}
	reachable(t, servers[name], os.Getenv(servers[name]))
}
