package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

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
	fromFile, err := readConfigFile(cmd.Root(), file)
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
				errs = append(errs, fmt.Sprintf("%s=%q: %v (expected a %s, as for --%s)", envName(f.Name), v, err, f.Value.Type(), f.Name))
			}
			f.Changed = true
			return
		}
		if v, ok := fromFile[f.Name]; ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Sprintf("%s: key %q value %q: %v (expected a %s)", file, f.Name, v, err, f.Value.Type()))
			}
			f.Changed = true
		}
	})
	if len(errs) > 0 {
		return usagef("%s", strings.Join(errs, "; "))
	}
	return nil
}

// readConfigFile reads a flat YAML map of flag names to values. A key that is no flag of any
// command is an error, so a typo never silently falls back to a default.
func readConfigFile(root *cobra.Command, file string) (map[string]string, error) {
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
