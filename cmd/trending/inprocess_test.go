package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// inProcess is a trending command run in this test process (root command, context
// cancelled to stop it), with its output kept for a failure report.
type inProcess struct {
	t       testing.TB
	name    string
	out     bytes.Buffer
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startInProcess runs `trending args...` until stop (registered as a cleanup too).
func startInProcess(t testing.TB, args ...string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{t: t, name: args[0], cancel: cancel, done: make(chan error, 1)}
	root := newRootCommand()
	root.SetOut(&p.out)
	root.SetErr(&p.out)
	root.SetArgs(args)
	go func() { p.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(p.stop)
	return p
}

// stop cancels the command and waits up to a minute for it to return cleanly; on a failed
// test it logs the command's output.
func (p *inProcess) stop() {
	p.t.Helper()
	if p.stopped {
		return
	}
	p.stopped = true
	p.cancel()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("%s: %v", p.name, err)
		}
	case <-time.After(60 * time.Second):
		p.t.Errorf("%s did not stop within 60s", p.name)
	}
	if p.t.Failed() {
		p.t.Logf("%s output:\n%s", p.name, p.out.String())
	}
}
