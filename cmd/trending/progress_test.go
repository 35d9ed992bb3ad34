package main

import (
	"io"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestLogLinesAboveTheBar: on a terminal, a log line written while a bar is drawn clears the
// bar and prints on a line of its own, the bar drawn below it; detached, lines pass straight
// through.
func TestLogLinesAboveTheBar(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	screen := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptm)
		screen <- string(b)
	}()
	m := newMeter(tty, "s of event time")
	if m == nil {
		t.Fatal("no bar on a pseudo-terminal")
	}
	out := &logWriter{w: tty}
	out.attach(m)
	m.step(30, 120, "replaying the backfill")
	if _, err := out.Write([]byte("level=INFO msg=\"serving API listening\"\n")); err != nil {
		t.Fatal(err)
	}
	m.step(120, 120, "replaying the backfill")
	out.attach(nil)
	if _, err := out.Write([]byte("level=INFO msg=after\n")); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	got := <-screen
	// The bar redraws at most every 100 ms, so a step right after the line may not show;
	// the line must come out whole, on its own line, and the bar after it.
	line := strings.Index(got, "level=INFO msg=\"serving API listening\"\r\n")
	if line <= 0 || got[line-1] != '\r' || !strings.Contains(got[line:], "120/120") {
		t.Fatalf("the terminal showed %q: want the log line whole, then the bar (its end 120/120)", got)
	}
	if end := strings.LastIndex(got, "120/120"); end > strings.Index(got, "msg=after") {
		t.Fatalf("the bar was drawn after it was detached: %q", got)
	}
	if newMeter(io.Discard, "x") != nil {
		t.Fatal("a bar on a writer that is no terminal")
	}
}
