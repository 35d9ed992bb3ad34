package main

import (
	"os"
	"strings"

	"github.com/spf13/pflag"

	"trending/model/windowset"
)

// windowSetFlags are the served windows every role reads (model/windowset): --window-set (a
// spec), --window-preset (a named set) or --windows-file (YAML); one of them at most, the
// default preset when none. speed, merge, serve, batch, up and plan all take them, so every
// role of a deployment is given the same set.
type windowSetFlags struct {
	fs                 *pflag.FlagSet
	spec, preset, file string
	// the lists per group value: --group-by, --groups, --groups-max
	groupBy, groups string
	groupsMax       int
	parsed          *windowset.Set
}

// addWindowSetFlags adds --window-set, --window-preset and --windows-file, and the lists per
// group value: --group-by, --groups and --groups-max (defaultGroups is --groups' default:
// none for the cluster commands, up's demo regions for up).
func addWindowSetFlags(fs *pflag.FlagSet, defaultGroups string) *windowSetFlags {
	f := &windowSetFlags{fs: fs}
	fs.StringVar(&f.spec, "window-set", "", "the served windows, comma separated: NAME=sliding:LENGTH/BUCKET[:MODE], calendar:SPAN[:MODE] (hour, day, week or month), all=alltime[:MODE], NAME=decayed:HALFLIFE[:MODE] (trending now: every view counts 2^(-age/HALFLIFE), such as now=decayed:1h); MODE exact, sketch or auto (empty: --window-preset); give every role the same set. Default: "+windowset.DefaultSpec)
	fs.StringVar(&f.preset, "window-preset", "default", "a named window set: "+strings.Join(windowset.PresetNames(), ", ")+" (seed-004: the last minute, hour, day and 7 days, and the calendar day and week, every one by sketch so memory stays bounded whatever the number of distinct items; the batch makes the closed days and weeks exact)")
	fs.StringVar(&f.file, "windows-file", "", "a YAML file of the served windows (windows: [{name, kind, length, bucket, span, half_life, mode}, ...], and optionally groups: {by, values, every, max}) instead of --window-set")
	fs.StringVar(&f.groupBy, "group-by", windowset.ByRegion, "the event field whose values get lists of their own with --groups: "+strings.Join(windowset.Dimensions, ", "))
	fs.StringVar(&f.groups, "groups", defaultGroups, "the --group-by values that get lists of their own in every window beside the list of all items, comma separated (eu,us,apac), or * for every value seen up to --groups-max; served as /v1/trending?window=hour&region=eu; give every role the same (empty: none)")
	fs.IntVar(&f.groupsMax, "groups-max", windowset.DefaultMaxGroups, "with --groups '*': the most values each speed partition keeps lists of (the events of others are counted in trending_speed_group_events_dropped_total) and the batch publishes per window")
	return f
}

// explicit reports whether any of the flags was given (plan then sizes the set instead of
// its default table).
func (f *windowSetFlags) explicit() bool {
	return f.fs.Changed("window-set") || f.fs.Changed("window-preset") || f.fs.Changed("windows-file") ||
		f.fs.Changed("groups")
}

// groupsGiven reports whether any of the group flags was given.
func (f *windowSetFlags) groupsGiven() bool {
	return f.fs.Changed("group-by") || f.fs.Changed("groups") || f.fs.Changed("groups-max")
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
	if f.file != "" && s.Groups.On() && f.groupsGiven() {
		return s, usagef("--windows-file %s sets its groups: drop --group-by, --groups and --groups-max, or the file's groups", f.file)
	}
	if !s.Groups.On() {
		g, err := windowset.ParseGroupValues(f.groupBy, f.groups, f.groupsMax)
		if err != nil {
			return s, usagef("--groups %q (--group-by %s, --groups-max %d): %v", f.groups, f.groupBy, f.groupsMax, err)
		}
		s.Groups = g
	}
	f.parsed = &s
	return s, nil
}
