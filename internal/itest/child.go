package itest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Build builds the module's binary (cmd/trending) into dir and returns its path. pkg is the
// path of cmd/trending from the calling test's package directory ("../../cmd/trending").
func Build(t testing.TB, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, "trending")
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr returns a loopback address with a port free at the time of the call.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Child is one role of the binary run as a child process, its output kept in Logs.
type Child struct {
	Bin, Name string
	Args      []string
	Env       []string // added to the test's environment
	Cmd       *exec.Cmd
	Logs      *SyncBuffer
	Starts    int
}

// NewChild returns the role name of bin with args, not started.
func NewChild(bin, name string, args ...string) *Child {
	return &Child{Bin: bin, Name: name, Args: args, Logs: &SyncBuffer{}}
}

// Start starts the process (again, after a Kill).
func (c *Child) Start(t testing.TB) {
	t.Helper()
	c.Cmd = exec.Command(c.Bin, c.Args...)
	if c.Env != nil {
		c.Cmd.Env = append(os.Environ(), c.Env...)
	}
	c.Cmd.Stdout, c.Cmd.Stderr = c.Logs, c.Logs
	if err := c.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.Name, err)
	}
	c.Starts++
	fmt.Fprintf(c.Logs, "--- start %d of %s (pid %d)\n", c.Starts, c.Name, c.Cmd.Process.Pid)
}

// Pid is the running process's id (0 before Start).
func (c *Child) Pid() int {
	if c.Cmd == nil || c.Cmd.Process == nil {
		return 0
	}
	return c.Cmd.Process.Pid
}

// Exited reports whether the process has ended (a zombie not yet waited for counts).
func (c *Child) Exited() bool {
	if c.Cmd == nil || c.Cmd.ProcessState != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Pid()))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// Kill SIGKILLs the process unless it was already waited for, and says whether the kill
// is what ended it (false: it had exited by itself).
func (c *Child) Kill() bool {
	if c.Cmd == nil || c.Cmd.Process == nil || c.Cmd.ProcessState != nil {
		return true
	}
	c.Cmd.Process.Kill()
	if c.Cmd.Wait(); c.Cmd.ProcessState == nil {
		return true // another goroutine is waiting for it (Wait was already called)
	}
	ws, ok := c.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// SyncBuffer is a bytes.Buffer safe for a child's stdout and stderr and the test's reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Tail is the last n lines.
func (s *SyncBuffer) Tail(n int) string {
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
