package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// lockData creates dir if needed and takes an exclusive lock on dir/.lock (flock: the kernel
// drops it when the process ends, however it ends), so that a second process on the same
// data fails at once, naming the first, instead of opening the live broker's log and waiting
// for the stores' locks. unlock releases it.
func lockData(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usagef("--data %s: %v", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usagef("--data %s: %v", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := "another trending process"
		if pid, err := strconv.Atoi(string(bytes.TrimSpace(holder))); err == nil {
			who = fmt.Sprintf("another trending process (pid %d)", pid)
		}
		return nil, fmt.Errorf("--data %s is in use by %s: stop it first, or give this one another --data", dir, who)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
