package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string         `yaml:"image"`
	Build       any            `yaml:"build"`
	Command     []string       `yaml:"command"`
	Environment map[string]any `yaml:"environment"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Profiles []string `yaml:"profiles"`
	Deploy   struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "infra", "compose", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// interpolated matches a compose value that takes a credential from the environment and
// refuses to start without it: ${VAR:?message} (a default, ${VAR:-x}, would be a credential
// written in the file).
var interpolated = regexp.MustCompile(`^\$\{[A-Z_][A-Z0-9_]*:\?[^}]*\}$`)

// TestCompose checks infra/compose/compose.yaml: the whole stack is there, each trending
// role runs a real subcommand with flags and TRENDING_* variables that exist, every
// long-running service has a health check, and no credential is written in the file.
func TestCompose(t *testing.T) {
	c := loadCompose(t)
	for _, want := range []string{"kafka", "minio", "clickhouse", "migrate", "speed", "merge", "archive", "api", "batch-nightly"} {
		if _, ok := c.Services[want]; !ok {
			t.Errorf("no service %s: the compose file runs the whole stack", want)
		}
	}
	if env := c.Services["kafka"].Environment; !strings.Contains(fmt.Sprint(env["KAFKA_PROCESS_ROLES"]), "controller") {
		t.Errorf("kafka: KAFKA_PROCESS_ROLES %v: want KRaft (broker,controller), no ZooKeeper", env["KAFKA_PROCESS_ROLES"])
	}
	roles := map[string][]string{} // service -> subcommand path
	for name, s := range c.Services {
		trending := s.Build != nil || strings.Contains(s.Image, "trending")
		// Health checks on the long-running services; the one-shot migrate and the
		// optional tools behind a profile (the nightly batch, demo load) have none.
		if name != "migrate" && len(s.Profiles) == 0 && s.Healthcheck == nil {
			t.Errorf("%s: no health check", name)
		}
		for k, v := range s.Environment {
			val := fmt.Sprint(v)
			if secretish(k) && !interpolated.MatchString(val) {
				t.Errorf("%s: %s is written in the file (%q): take it from the environment with ${VAR:?message}", name, k, val)
			}
		}
		if !trending {
			continue
		}
		var env []string
		for k := range s.Environment {
			env = append(env, k)
		}
		slices.Sort(env)
		checkContainer(t, "compose service "+name, s.Command, env)
		for _, a := range s.Command {
			if strings.HasPrefix(a, "-") {
				break
			}
			roles[name] = append(roles[name], a)
		}
		if hc := s.Healthcheck; hc != nil && (len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/local/bin/probe") {
			t.Errorf("%s: health check %q: the image has no shell; use [CMD, /usr/local/bin/probe, URL]", name, hc.Test)
		}
	}
	// Every role of the pipeline is run by some service.
	have := map[string]bool{}
	for _, p := range roles {
		have[strings.Join(p, " ")] = true
	}
	for _, want := range []string{"migrate", "speed", "merge", "archive", "serve", "batch nightly"} {
		if !have[want] {
			t.Errorf("no service runs trending %s", want)
		}
	}
	// The API's health check is its readiness endpoint; roles using ClickHouse wait for the
	// migration to finish.
	if hc := c.Services["api"].Healthcheck; hc == nil || !strings.HasSuffix(hc.Test[len(hc.Test)-1], "/readyz") {
		t.Errorf("api: health check should probe /readyz")
	}
	for _, n := range []string{"merge", "api", "batch-nightly"} {
		if d := c.Services[n].DependsOn["migrate"]; d.Condition != "service_completed_successfully" {
			t.Errorf("%s: depends_on migrate %q: want service_completed_successfully", n, d.Condition)
		}
	}
	if c.Services["merge"].Deploy.Replicas < 2 {
		t.Errorf("merge: %d replicas: run an active merger and a standby", c.Services["merge"].Deploy.Replicas)
	}
}

// TestComposeChecksCatchMistakes makes sure the checks above can fail: a misspelt flag, a
// variable no flag reads, a parent command that does not run and a bad value are reported.
func TestComposeChecksCatchMistakes(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"unknown flag", []string{"speed", "--sketch-widht", "1024"}, nil},
		{"flag of another command", []string{"serve", "--sketch-width", "1024"}, nil},
		{"variable of another command", []string{"serve"}, []string{"TRENDING_SKETCH_WIDTH"}},
		{"not a TRENDING variable", []string{"serve"}, []string{"CLICKHOUSE_PASSWORD"}},
		{"group command", []string{"batch"}, nil},
		{"bad value", []string{"speed", "--publish-every", "often"}, nil},
		{"stray argument", []string{"merge", "now"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := record(func(r reporter) { checkContainer(r, c.name, c.args, c.env) }); !r.failed {
				t.Fatalf("checkContainer accepted %v with %v", c.args, c.env)
			}
		})
	}
	// And the good case passes.
	good := []string{"TRENDING_KAFKA", "TRENDING_LOG_LEVEL", "TRENDING_KAFKA_PASSWORD", "GOMEMLIMIT"}
	if r := record(func(r reporter) { checkContainer(r, "good", []string{"speed", "--day-mode", "sketch"}, good) }); r.failed {
		t.Fatalf("checkContainer refused a good container: %v", r.msgs)
	}
}
