package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"trending/model/windowset"
	"trending/speed/window"
)

// TestDefaultWindowSetIsTheSpeedDefault: the default set, as the speed core counts it, is
// window.DefaultWindows() exactly, so a deployment's checkpoints (whose fingerprint names
// every window) restore after the upgrade.
func TestDefaultWindowSetIsTheSpeedDefault(t *testing.T) {
	if got, want := window.FromSet(windowset.Default()), window.DefaultWindows(); !reflect.DeepEqual(got, want) {
		t.Fatalf("window.FromSet(Default()) =\n%+v\nwant window.DefaultWindows() =\n%+v", got, want)
	}
	fs := pflag.NewFlagSet("speed", pflag.ContinueOnError)
	wf := addWindowFlags(fs, 1<<18, 1<<16, "")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c, err := wf.config()
	if err != nil || !reflect.DeepEqual(c.Windows, window.DefaultWindows()) {
		t.Fatalf("speed flags' default windows %+v (%v)", c.Windows, err)
	}
}

func TestWindowSetFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		live string // "" with err
		err  string
	}{
		{nil, "hour,day,month,all", ""},
		{[]string{"--window-preset", "seed-004"}, "minute,hour,day,7d", ""},
		{[]string{"--window-set", "now=sliding:5m/1m,calendar:week"}, "now", ""},
		{[]string{"--window-preset", "seed-9"}, "", "--window-preset: window preset \"seed-9\": use one of default, seed-004"},
		{[]string{"--window-set", "hour=sliding:1h/7m"}, "", "--window-set: window \"hour\": bucket 7m: use 1m, 1h or 24h"},
		{[]string{"--window-set", "calendar:day", "--window-preset", "seed-004"}, "", "use one of them"},
		{[]string{"--windows-file", "/nonexistent.yaml"}, "", "--windows-file: open /nonexistent.yaml"},
	} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f := addWindowSetFlags(fs, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		s, err := f.set()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want an error with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(s.Live(), ",") != c.live {
			t.Errorf("%v: live %v (%v), want %s", c.args, s.Live(), err, c.live)
		}
	}
}

// TestModeFlagsOverrideOnlyWhenGiven: --hour-mode and friends keep their meaning for the
// default set, and leave a configured set's modes alone unless given.
func TestModeFlagsOverrideOnlyWhenGiven(t *testing.T) {
	mode := func(args []string, name string) windowset.Mode {
		t.Helper()
		fs := pflag.NewFlagSet("speed", pflag.ContinueOnError)
		wf := addWindowFlags(fs, 1<<18, 1<<16, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c, err := wf.config()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.Windows {
			if w.Name == name {
				return w.Mode
			}
		}
		t.Fatalf("no window %s in %+v", name, c.Windows)
		return ""
	}
	if m := mode([]string{"--window-set", "day=sliding:24h/1m:sketch"}, "day"); m != windowset.Sketch {
		t.Errorf("configured sketch day: %s", m)
	}
	if m := mode([]string{"--window-set", "day=sliding:24h/1m:sketch", "--day-mode", "exact"}, "day"); m != windowset.Exact {
		t.Errorf("--day-mode exact: %s", m)
	}
	if m := mode([]string{"--window-preset", "seed-004"}, "hour"); m != windowset.Sketch {
		t.Errorf("seed-004 hour: %s, want the preset's sketch (not --hour-mode's default)", m)
	}
	if m := mode([]string{"--window-set", "hour=sliding:1h/1m,calendar:week:auto"}, "calendar-week"); m != windowset.Auto {
		t.Errorf("configured auto calendar week: %s", m)
	}
	if m := mode([]string{"--hour-mode", "sketch"}, "calendar-hour"); m != windowset.Sketch {
		t.Errorf("--hour-mode sketch on the calendar hour: %s", m)
	}
}
