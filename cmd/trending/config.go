package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// envName maps a flag name to its environment variable: --sketch-width is TRENDING_SKETCH_WIDTH.
func envName(flag string) string {
	return "TRENDING_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyConfig fills every flag the user did not set on the command line, first from its
// TRENDING_* environment variable, then from the YAML file. Precedence: flag, env, file, default.
func applyConfig(cmd *cobra.Command, file string) error {
	if file == "" {
		file = os.Getenv("TRENDING_CONFIG")
	}
	known := knownFlags(cmd.Root())
	if err := checkEnv(known, os.Environ()); err != nil {
		return err
	}
	fromFile, err := readConfigFile(known, file)
	if err != nil {
		return err
	}
	var errs []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q: %s (as for --%s)", envName(f.Name), v, valueProblem(f, err), f.Name))
			}
			f.Changed = true
			return
		}
		if v, ok := fromFile[f.Name]; ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Sprintf("%s: key %q value %q: %s", file, f.Name, v, valueProblem(f, err)))
			}
			f.Changed = true
		}
	})
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Value.Type() == "duration" && !negativeAllowed[f.Name] {
			if v, err := time.ParseDuration(f.Value.String()); err == nil && v < 0 {
				errs = append(errs, fmt.Sprintf("--%s: %s: must not be negative", f.Name, f.Value))
			}
		}
	})
	if len(errs) > 0 {
		return usagef("%s", strings.Join(errs, "; "))
	}
	return nil
}

// negativeAllowed are the duration flags where a negative value means something (their help
// says what); every other duration flag refuses one, so that a sign typed by mistake is never
// taken as "no lateness" or "check every -5s".
var negativeAllowed = map[string]bool{"max-future": true}

// knownFlags is the name of every flag of every command.
func knownFlags(root *cobra.Command) map[string]bool {
	known := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return known
}

// reservedEnv are the TRENDING_* variables that are no flag: read by the binary itself
// (TRENDING_CONFIG, TRENDING_FAULT) or set by the project's scripts and tests, which run the
// binary with them in its environment. A name ending in '*' is a prefix.
var reservedEnv = []string{
	"TRENDING_CONFIG", "TRENDING_FAULT", "TRENDING_RUN", "TRENDING_CACHE", "TRENDING_ARTIFACTS",
	"TRENDING_IMAGE", "TRENDING_IT_*", "TRENDING_BENCH_*", "TRENDING_TEST_*", "TRENDING_BULK_PAIR",
	"TRENDING_XXH3_PAIR",
}

// checkEnv refuses a TRENDING_* variable that names no flag of any command, as the YAML file
// refuses an unknown key: TRENDING_SKETCH_WIDHT=1 would otherwise leave the default in force
// without a word. It suggests the nearest flag.
func checkEnv(known map[string]bool, environ []string) error {
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "TRENDING_") || reserved(name) {
			continue
		}
		flag := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "TRENDING_"), "_", "-"))
		if known[flag] {
			continue
		}
		msg := name + " names no flag"
		if near := nearest(flag, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s, for --%s?)", envName(near), near)
		}
		bad = append(bad, msg)
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return usagef("unknown environment variables: %s; each TRENDING_* variable is a flag's name as listed by 'trending <command> --help' (--sketch-width is TRENDING_SKETCH_WIDTH): unset it or correct it", strings.Join(bad, "; "))
}

func reserved(name string) bool {
	for _, r := range reservedEnv {
		if p, ok := strings.CutSuffix(r, "*"); ok && strings.HasPrefix(name, p) || name == r {
			return true
		}
	}
	return false
}

// nearest is the known flag closest to name by edit distance, if it is close enough to be a
// typo (at most a third of the name's letters apart), else "".
func nearest(name string, known map[string]bool) string {
	best, bestD := "", len(name)/3+1
	for k := range known {
		if d := editDistance(name, k); d < bestD || d == bestD && best != "" && k < best {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes; flag names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// valueProblem says in words why value err could not be set on f: "not a whole number", not
// "strconv.ParseInt: parsing ...: invalid syntax".
func valueProblem(f *pflag.Flag, err error) string {
	var num *strconv.NumError
	switch t := f.Value.Type(); {
	case errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange):
		return fmt.Sprintf("out of range for a %s", t)
	case strings.HasPrefix(t, "uint"):
		return "not a whole number of 0 or more"
	case strings.HasPrefix(t, "int"):
		return "not a whole number"
	case strings.HasPrefix(t, "float"):
		return "not a number"
	case t == "bool":
		return "not true or false"
	case t == "duration" && strings.HasPrefix(err.Error(), "time: "):
		return "not a duration (a number with a unit: 30s, 5m, 1h30m)"
	case errors.As(err, &num):
		return "not a number"
	}
	return err.Error()
}

// readConfigFile reads a flat YAML map of flag names to values. A key that is no flag of any
// command is an error, so a typo never silently falls back to a default.
func readConfigFile(known map[string]bool, file string) (map[string]string, error) {
	if file == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, usagef("config file: %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, usagef("config file %s: not a YAML map of flag names to values: %v", file, err)
	}
	out := make(map[string]string, len(doc))
	var unknown []string
	for k, v := range doc {
		if !known[k] {
			unknown = append(unknown, k)
			continue
		}
		switch tv := v.(type) {
		case []any:
			parts := make([]string, len(tv))
			for i, p := range tv {
				parts[i] = fmt.Sprint(p)
			}
			out[k] = strings.Join(parts, ",")
		case map[string]any:
			return nil, usagef("config file %s: key %q holds a map; keys are flag names with plain values", file, k)
		default:
			out[k] = fmt.Sprint(tv)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, usagef("config file %s: unknown keys %s: keys are flag names as listed by 'trending <command> --help'", file, strings.Join(unknown, ", "))
	}
	return out, nil
}
