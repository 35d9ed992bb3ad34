package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is what one side cost: CPU (user + system, every thread), wall time and peak RSS.
type usage struct {
	CPU, Wall time.Duration
	PeakRSS   int64 // bytes
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux
// architecture Go runs on (the kernel fixes it for the ABI).
const clockTicks = 100

// procUsage reads a running process's CPU so far (utime + stime of all its threads; it has
// no children) and its peak RSS (VmHWM).
func procUsage(pid int) (cpu time.Duration, peak int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name in parentheses may hold spaces: the fields start after the last ')'.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields 14 and 15 of stat (utime, stime) are 11 and 12 here (field 3, state, is 0).
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	cpu = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/%d/status: VmHWM %q", pid, v)
			}
			peak = kb << 10
		}
	}
	return cpu, peak, nil
}

// exitUsage is a waited-for process's CPU (its own and its reaped children's) and peak RSS,
// from wait4's rusage.
func exitUsage(ps *os.ProcessState) (cpu time.Duration, peak int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return ps.UserTime() + ps.SystemTime(), 0
	}
	return ps.UserTime() + ps.SystemTime(), ru.Maxrss << 10
}

// loadavg is /proc/loadavg's three averages, as text.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
