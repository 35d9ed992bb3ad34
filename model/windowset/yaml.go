package windowset

import (
	"bytes"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"trending/model"
)

// yamlFile is the --windows-file format:
//
//	windows:
//	  - {name: minute, kind: sliding, length: 1m, bucket: 1m, mode: exact}
//	  - {name: 7d, kind: sliding, length: 7d, bucket: 1h}
//	  - {kind: calendar, span: week}
//	  - {kind: alltime, mode: sketch}
//	  - {name: now, kind: decayed, half_life: 1h, mode: exact}
//	groups:                    # optional: lists per group value (Groups)
//	  by: region
//	  values: [eu, us, apac]   # or every: true, with max: 64
//
// Unknown keys are refused, so a misspelt field is not silently ignored.
type yamlFile struct {
	Windows []yamlWindow `yaml:"windows"`
	Groups  *yamlGroups  `yaml:"groups"`
}

type yamlGroups struct {
	By     string   `yaml:"by"`
	Values []string `yaml:"values"`
	Every  bool     `yaml:"every"`
	Max    *int     `yaml:"max"`
}

type yamlWindow struct {
	Name   string `yaml:"name"`
	Kind   string `yaml:"kind"`
	Length string `yaml:"length"`
	Bucket string `yaml:"bucket"`
	Span   string `yaml:"span"`
	Mode   string `yaml:"mode"`
	// HalfLife is a decayed window's half-life (1h, 30m).
	HalfLife string `yaml:"half_life"`
}

// ParseYAML reads a window set from YAML (the --windows-file format, yamlFile) and validates it.
func ParseYAML(b []byte) (Set, error) {
	var f yamlFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Set{}, fmt.Errorf("windows file: %w", err)
	}
	var s Set
	var errs []error
	for i, y := range f.Windows {
		w := Window{Name: y.Name, Kind: Kind(y.Kind), Span: model.Period(y.Span), Mode: Mode(y.Mode)}
		var err error
		switch w.Kind {
		case Sliding:
			if w.Length, err = ParseDuration(y.Length); err != nil {
				errs = append(errs, fmt.Errorf("windows[%d] %q: length: %w", i, y.Name, err))
				continue
			}
			if w.Bucket, err = ParseDuration(y.Bucket); err != nil {
				errs = append(errs, fmt.Errorf("windows[%d] %q: bucket: %w", i, y.Name, err))
				continue
			}
		case Calendar:
			if w.Name == "" {
				w.Name = string(w.Span)
			}
		case AllTime, "all-time":
			w.Kind = AllTime
			if w.Name == "" {
				w.Name = AllName
			}
		case Decayed:
			if w.HalfLife, err = ParseDuration(y.HalfLife); err != nil {
				errs = append(errs, fmt.Errorf("windows[%d] %q: half_life: %w", i, y.Name, err))
				continue
			}
		}
		if w.Kind != Decayed && y.HalfLife != "" {
			errs = append(errs, fmt.Errorf("windows[%d] %q: half_life is for decayed windows only", i, w.Name))
			continue
		}
		if w.Kind != Sliding && (y.Length != "" || y.Bucket != "") {
			errs = append(errs, fmt.Errorf("windows[%d] %q: length and bucket are for sliding windows only", i, w.Name))
			continue
		}
		s.Windows = append(s.Windows, w)
	}
	if y := f.Groups; y != nil {
		s.Groups = Groups{By: y.By, Values: y.Values, Every: y.Every}
		if y.Every {
			s.Groups.Max = DefaultMaxGroups
			if y.Max != nil {
				s.Groups.Max = *y.Max
			}
		} else if y.Max != nil {
			errs = append(errs, fmt.Errorf("groups: max caps every: true only (a list of values is its own bound)"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Set{}, err
	}
	return s, s.Validate()
}

// HasGroups reports whether a windows file sets its groups (the --groups flags then must not).
func HasGroups(b []byte) bool {
	var f struct {
		Groups *yaml.Node `yaml:"groups"`
	}
	return yaml.Unmarshal(b, &f) == nil && f.Groups != nil
}
