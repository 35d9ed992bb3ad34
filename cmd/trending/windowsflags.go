package main

import (
	"os"
	"strings"

	"github.com/spf13/pflag"

	"trending/model/windowset"
	"trending/speed/window"
)

// windowSetFlags are the served windows every role reads (model/windowset): --window-set (a
// spec), --window-preset (a named set) or --windows-file (YAML); one of them at most, the
// default preset when none. speed, merge, serve, batch, up and plan all take them, so every
// role of a deployment is given the same set.
type windowSetFlags struct {
	fs                 *pflag.FlagSet
	spec, preset, file string
	parsed             *windowset.Set
}

// addWindowSetFlags adds --window-set, --window-preset and --windows-file.
func addWindowSetFlags(fs *pflag.FlagSet) *windowSetFlags {
	f := &windowSetFlags{fs: fs}
	fs.StringVar(&f.spec, "window-set", "", "the served windows, comma separated: NAME=sliding:LENGTH/BUCKET[:MODE], calendar:SPAN[:MODE] (hour, day, week or month), all=alltime[:MODE], NAME=decayed:HALFLIFE[:MODE] (trending now: every view counts 2^(-age/HALFLIFE), such as now=decayed:1h); MODE exact, sketch or auto (empty: --window-preset); give every role the same set. Default: "+windowset.DefaultSpec)
	fs.StringVar(&f.preset, "window-preset", "default", "a named window set: "+strings.Join(windowset.PresetNames(), ", ")+" (seed-004: the last minute, hour, day and 7 days, and the calendar week)")
	fs.StringVar(&f.file, "windows-file", "", "a YAML file of the served windows (windows: [{name, kind, length, bucket, span, half_life, mode}, ...]) instead of --window-set")
	return f
}

// explicit reports whether any of the flags was given (plan then sizes the set instead of
// its default table).
func (f *windowSetFlags) explicit() bool {
	return f.fs.Changed("window-set") || f.fs.Changed("window-preset") || f.fs.Changed("windows-file")
}

// set returns the configured window set, or a usage error naming the flag.
func (f *windowSetFlags) set() (windowset.Set, error) {
	if f.parsed != nil {
		return *f.parsed, nil
	}
	n := 0
	for _, name := range []string{"window-set", "windows-file"} {
		if f.fs.Changed(name) {
			n++
		}
	}
	if f.fs.Changed("window-preset") {
		n++
	}
	if n > 1 {
		return windowset.Set{}, usagef("--window-set, --window-preset and --windows-file each give the whole set: use one of them")
	}
	var s windowset.Set
	var err error
	switch {
	case f.spec != "":
		if s, err = windowset.Parse(f.spec); err != nil {
			return s, usagef("--window-set: %v", err)
		}
	case f.file != "":
		b, rerr := os.ReadFile(f.file)
		if rerr != nil {
			return s, usagef("--windows-file: %v", rerr)
		}
		if s, err = windowset.ParseYAML(b); err != nil {
			return s, usagef("--windows-file %s: %v", f.file, err)
		}
	default:
		if s, err = windowset.Preset(f.preset); err != nil {
			return s, usagef("--window-preset: %v", err)
		}
	}
	f.parsed = &s
	return s, nil
}

// speedWindows is the speed core's form of a set: a live window keeps its name, a calendar
// window is counted as "calendar-SPAN" and served under its span (speed/worker).
func speedWindows(s windowset.Set) []window.WindowConfig {
	out := make([]window.WindowConfig, 0, len(s.Windows))
	for _, w := range s.Windows {
		wc := window.WindowConfig{Name: w.Name, Mode: window.Mode(w.Mode)}
		switch w.Kind {
		case windowset.Sliding:
			wc.Kind, wc.Length, wc.Bucket = window.Sliding, w.Length, w.Bucket
		case windowset.Calendar:
			wc.Kind, wc.Name, wc.Span = window.Calendar, "calendar-"+w.Span, w.Span
		case windowset.AllTime:
			wc.Kind = window.AllTime
		case windowset.Decayed:
			wc.Kind, wc.HalfLife = window.Decayed, w.HalfLife
		default:
			panic("BUG: speedWindows of window kind " + string(w.Kind))
		}
		out = append(out, wc)
	}
	return out
}
