package deploytest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"trending/model/windowset"
)

// object is one Kubernetes manifest, decoded loosely: the checks walk the fields they need.
type object struct {
	file string
	doc  map[string]any
}

func (o object) kind() string { s, _ := o.doc["kind"].(string); return s }
func (o object) name() string { s, _ := get(o.doc, "metadata", "name").(string); return s }

func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func loadManifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root(t), "infra", "k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in infra/k8s: %v", err)
	}
	var out []object
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(f), err)
			}
			if doc != nil {
				out = append(out, object{file: filepath.Base(f), doc: doc})
			}
		}
	}
	return out
}

// podSpec returns the pod template's spec of a Deployment, Job or CronJob.
func podSpec(o object) map[string]any {
	var spec any
	switch o.kind() {
	case "Deployment", "Job":
		spec = get(o.doc, "spec", "template", "spec")
	case "CronJob":
		spec = get(o.doc, "spec", "jobTemplate", "spec", "template", "spec")
	}
	m, _ := spec.(map[string]any)
	return m
}

func strs(v any) []string {
	var out []string
	for _, x := range asList(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// quantity parses the Kubernetes quantities used here (500m, 2, 6Gi, 512Mi) into cores or
// bytes.
func quantity(t *testing.T, v any) float64 {
	t.Helper()
	s, _ := v.(string)
	for suf, mul := range map[string]float64{"m": 1e-3, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suf); ok {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				t.Fatalf("quantity %q: %v", s, err)
			}
			return f * mul
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("quantity %q: %v", s, err)
	}
	return f
}

// TestK8sManifests checks infra/k8s: every role is deployed as the issue asks and reads the one
// window set (ConfigMap trending-windows, generated from windows/windows.yaml), each container
// runs a real subcommand with existing flags and variables, credentials come only from
// Secrets (never a value in a file), ConfigMap references resolve, pods run as non-root,
// and the speed workers' resources match `trending plan` for the partitions configured.
func TestK8sManifests(t *testing.T) {
	objs := loadManifests(t)
	config := map[string]string{}
	byName := map[string]object{}
	for _, o := range objs {
		byName[o.kind()+"/"+o.name()] = o
		if o.kind() == "ConfigMap" && o.name() == "trending-config" {
			for k, v := range get(o.doc, "data").(map[string]any) {
				s, ok := v.(string)
				if !ok {
					t.Errorf("ConfigMap trending-config: %s is not a string (quote it)", k)
				}
				config[k] = s
			}
		}
		if o.kind() == "Secret" {
			t.Errorf("%s: a Secret manifest: credentials are created by the operator, never kept in files", o.file)
		}
	}
	if len(config) == 0 {
		t.Fatal("no ConfigMap trending-config")
	}
	for _, want := range []string{"Deployment/trending-speed", "Deployment/trending-merge", "Deployment/trending-archive",
		"Deployment/trending-api", "CronJob/trending-nightly", "Job/trending-migrate", "Service/trending-api"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("no %s", want)
		}
	}
	partitions, err := strconv.Atoi(config["partitions"])
	if err != nil {
		t.Fatalf("ConfigMap partitions %q: %v", config["partitions"], err)
	}

	runs := map[string]string{} // subcommand path -> object
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		where := o.file + " " + o.kind() + "/" + o.name()
		if get(spec, "securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: pod securityContext.runAsNonRoot is not true", where)
		}
		for _, c := range asList(spec["containers"]) {
			if cmd := strs(get(c, "command")); len(cmd) > 0 {
				t.Errorf("%s: command %q overrides the image's entrypoint; give the subcommand in args", where, cmd)
			}
			args := strs(get(c, "args"))
			var env []string
			for _, e := range asList(get(c, "env")) {
				name, _ := get(e, "name").(string)
				env = append(env, name)
				value, hasValue := get(e, "value").(string)
				if secretish(name) && hasValue && value != "" {
					t.Errorf("%s: %s has a value in the file: take it from a Secret (secretKeyRef)", where, name)
				}
				if secretish(name) && !hasValue && get(e, "valueFrom", "secretKeyRef") == nil {
					t.Errorf("%s: %s does not come from a Secret", where, name)
				}
				if ref := get(e, "valueFrom", "configMapKeyRef"); ref != nil {
					key, _ := get(ref, "key").(string)
					if get(ref, "name") != "trending-config" {
						t.Errorf("%s: %s refers to ConfigMap %v: there is only trending-config", where, name, get(ref, "name"))
					} else if _, ok := config[key]; !ok {
						t.Errorf("%s: %s refers to key %q, which trending-config lacks", where, name, key)
					}
				}
			}
			checkContainer(t, where, args, env)
			var path []string
			for _, a := range args {
				if strings.HasPrefix(a, "-") {
					break
				}
				path = append(path, a)
			}
			runs[strings.Join(path, " ")] = o.kind() + "/" + o.name()
			if get(c, "securityContext", "readOnlyRootFilesystem") != true || get(c, "securityContext", "allowPrivilegeEscalation") != false {
				t.Errorf("%s: want readOnlyRootFilesystem and no privilege escalation", where)
			}
			if get(c, "resources", "requests", "memory") == nil || get(c, "resources", "limits", "memory") == nil {
				t.Errorf("%s: no memory request and limit", where)
			}
		}
	}
	for path, want := range map[string]string{"speed": "Deployment/trending-speed", "merge": "Deployment/trending-merge",
		"archive": "Deployment/trending-archive", "serve": "Deployment/trending-api", "batch nightly": "CronJob/trending-nightly", "migrate": "Job/trending-migrate"} {
		if runs[path] != want {
			t.Errorf("trending %s runs in %q, want %s", path, runs[path], want)
		}
	}

	// The API is ready when /readyz says so; the merger runs an active and a standby.
	api := podSpec(byName["Deployment/trending-api"])
	if p := get(asList(api["containers"])[0], "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("api readinessProbe path %v, want /readyz", p)
	}
	if r := get(byName["Deployment/trending-merge"].doc, "spec", "replicas"); r != 2 {
		t.Errorf("merge replicas %v, want 2 (one active, one standby)", r)
	}
	if s := get(byName["CronJob/trending-nightly"].doc, "spec", "concurrencyPolicy"); s != "Forbid" {
		t.Errorf("nightly concurrencyPolicy %v: want Forbid, so two runs never overlap", s)
	}

	// Speed workers: replicas up to the partition count, memory from `trending plan`.
	speed := byName["Deployment/trending-speed"]
	replicas, _ := get(speed.doc, "spec", "replicas").(int)
	if replicas < 1 || replicas > partitions {
		t.Fatalf("speed replicas %d: want 1..%d (the partitions); more would sit idle", replicas, partitions)
	}
	perPartition := planPerPartition(t, partitions, checkWindowsConfigMap(t, byName))
	c := asList(podSpec(speed)["containers"])[0]
	owned := (partitions + replicas - 1) / replicas
	req, limit := quantity(t, get(c, "resources", "requests", "memory")), quantity(t, get(c, "resources", "limits", "memory"))
	if need := float64(owned) * perPartition; req < need {
		t.Errorf("speed memory request %.2f GB < %d partitions x %.0f MB of window state (trending plan)", req/1e9, owned, perPartition/1e6)
	}
	// After losing a worker a survivor owns one partition more, and a checkpoint needs one
	// partition's state again while it is written.
	if need := float64(owned+2) * perPartition; limit < need {
		t.Errorf("speed memory limit %.2f GB < (%d+2) partitions x %.0f MB", limit/1e9, owned, perPartition/1e6)
	}
}

// planPerPartition runs `trending plan` for the 10x case of docs/scale-out.md with the
// partitions configured and the window set of windowsFile, and returns the window state per
// partition in bytes (its "all windows as chosen" line). Where a window's configured mode is
// not what the memory budgets choose, the plan says "the budgets say": the ConfigMap must say
// what the plan says for this many partitions.
func planPerPartition(t *testing.T, partitions int, windowsFile string) float64 {
	t.Helper()
	out := runBin(t, "plan", "--windows-file", windowsFile, "--events-per-day", "5e10", "--distinct-per-minute", "2e7",
		"--distinct-per-hour", "3e8", "--distinct-per-day", "1.5e9", "--distinct-per-month", "5e9", "--partitions", strconv.Itoa(partitions))
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "the budgets say") {
			t.Errorf("ConfigMap trending-windows gives a window a mode the plan does not choose for %d partitions:\n%s", partitions, line)
		}
	}
	total := regexp.MustCompile(`all windows as chosen: ([\d.]+ [KMGT]?B) per partition`).FindStringSubmatch(out)
	if total == nil {
		t.Fatalf("no \"all windows as chosen\" line in trending plan:\n%s", out)
	}
	return decimalBytes(t, total[1])
}

func decimalBytes(t *testing.T, s string) float64 {
	t.Helper()
	num, unit, _ := strings.Cut(s, " ")
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("size %q: %v", s, err)
	}
	i := slices.Index([]string{"B", "KB", "MB", "GB", "TB"}, unit)
	if i < 0 {
		t.Fatalf("size %q: unknown unit", s)
	}
	for ; i > 0; i-- {
		f *= 1000
	}
	return f
}

// windowRoles are the subcommands that read the window set; each must read the one in
// ConfigMap trending-windows, or the API would accept names the workers never count.
var windowRoles = map[string]string{"speed": "Deployment/trending-speed", "merge": "Deployment/trending-merge",
	"serve": "Deployment/trending-api", "batch nightly": "CronJob/trending-nightly"}

// checkWindowsConfigMap checks that kustomization.yaml generates ConfigMap trending-windows
// from a window set the binary parses, with the key windows.yaml, and that every role reading
// windows mounts it and points TRENDING_WINDOWS_FILE at it. It returns the set's file, for
// `trending plan`.
func checkWindowsConfigMap(t *testing.T, byName map[string]object) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "infra", "k8s", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `yaml:"resources"`
		Generate  []struct {
			Name  string   `yaml:"name"`
			Files []string `yaml:"files"`
		} `yaml:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	var file string
	for _, g := range k.Generate {
		for _, f := range g.Files {
			if key, path, _ := strings.Cut(f, "="); g.Name == "trending-windows" && key == "windows.yaml" {
				file = filepath.Join(root(t), "infra", "k8s", path)
			}
		}
	}
	if file == "" {
		t.Fatal("kustomization.yaml generates no ConfigMap trending-windows with key windows.yaml: the roles would each fall back to their own default window set")
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := windowset.ParseYAML(doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	// Every manifest is applied: one left out of resources would not run.
	for _, o := range byName {
		if o.kind() != "Kustomization" && !slices.Contains(k.Resources, o.file) {
			t.Errorf("kustomization.yaml: %s (%s/%s) is not in resources", o.file, o.kind(), o.name())
		}
	}
	for role, name := range windowRoles {
		spec := podSpec(byName[name])
		if spec == nil {
			continue // reported as missing above
		}
		c := asList(spec["containers"])[0]
		var path string
		for _, e := range asList(get(c, "env")) {
			if get(e, "name") == "TRENDING_WINDOWS_FILE" {
				path, _ = get(e, "value").(string)
			}
		}
		if path == "" {
			t.Errorf("%s (trending %s): no TRENDING_WINDOWS_FILE: it would serve its default windows, not trending-windows", name, role)
			continue
		}
		dir, key := filepath.Split(path)
		mounted := false
		for _, m := range asList(get(c, "volumeMounts")) {
			if strings.TrimSuffix(get(m, "mountPath").(string), "/")+"/" != dir {
				continue
			}
			for _, v := range asList(spec["volumes"]) {
				if get(v, "name") == get(m, "name") && get(v, "configMap", "name") == "trending-windows" {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("%s: TRENDING_WINDOWS_FILE %s is not in a mount of ConfigMap trending-windows", name, path)
		}
		if key != "windows.yaml" {
			t.Errorf("%s: TRENDING_WINDOWS_FILE %s: the ConfigMap's key is windows.yaml", name, path)
		}
	}
	return file
}
