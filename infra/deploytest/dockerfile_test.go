package deploytest

import (
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDockerfile checks the image's recipe without a Docker engine: a build stage and a
// runtime stage, the final stage runs as a numeric non-root user from the binary built in
// the first, CGO is off, the build command builds ./cmd/trending, and the same command run
// here gives a statically linked binary that runs.
func TestDockerfile(t *testing.T) {
	args, stages := parseDockerfile(t, filepath.Join(root(t), "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("%d stages: want a build stage and a small runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	// The Go of the build stage is the module's.
	mod, err := os.ReadFile(filepath.Join(root(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("go.mod has no go directive")
	}
	if from := expand(build.from, args); !strings.HasPrefix(from, "golang:"+string(goLine[1])) {
		t.Errorf("build stage FROM %s: want golang:%s (go.mod's go %s)", from, goLine[1], goLine[1])
	}

	// The runtime stage: small, no shell, the binary from the build stage, a non-root user.
	if !regexp.MustCompile(`^(scratch|gcr\.io/distroless/static[\w.-]*(:[\w.-]+)?)$`).MatchString(final.from) {
		t.Errorf("runtime stage FROM %s: want scratch or distroless/static (a static binary needs nothing else)", final.from)
	}
	var user, entry string
	copied := map[string]bool{}
	for _, in := range final.instr {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				if from := strings.TrimPrefix(f[0], "--from="); from != build.name {
					t.Errorf("line %d: COPY --from=%s: want the build stage %q", in.line, from, build.name)
				}
				copied[f[2]] = true
			}
		case "RUN":
			t.Errorf("line %d: RUN in the runtime stage: it has no shell; do the work in the build stage", in.line)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" || !regexp.MustCompile(`^\d+$`).MatchString(uid) {
		t.Errorf("final USER %q: want a numeric non-root uid (Kubernetes runAsNonRoot can only verify a number)", user)
	}
	if entry != `["/usr/local/bin/trending"]` || !copied["/usr/local/bin/trending"] {
		t.Errorf("ENTRYPOINT %s, copied %v: want the built binary at /usr/local/bin/trending as the entrypoint", entry, copied)
	}
	if !copied["/usr/local/bin/probe"] {
		t.Errorf("the health-check probe is not copied to /usr/local/bin/probe (compose health checks run it)")
	}

	// The build command: CGO off, ./cmd/trending, and it works here.
	cmd := dockerBuildCommand(t, "./cmd/trending")
	if !slices.Contains(cmd, "CGO_ENABLED=0") {
		t.Errorf("build command %q: want CGO_ENABLED=0 (a static binary for a distroless image)", cmd)
	}
	bin := trendingBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("built binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary asks for a dynamic loader (PT_INTERP): it is not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("the binary links %v: it is not static", libs)
	}
	if h := helpOf(t, []string{"version"}); !h.runnable {
		t.Fatal("the built binary does not run `trending version`")
	}
	// The probe builds the same way.
	probe := dockerBuildCommand(t, "./infra/docker/probe")
	if err := runBuild(root(t), probe, filepath.Join(t.TempDir(), "probe")); err != nil {
		t.Fatalf("probe build: %v", err)
	}
}

// TestDockerignore checks the build context keeps what the build needs (every package
// ./cmd/trending imports, go.mod, go.sum) and drops what it must not carry (.git, data).
func TestDockerignore(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimPrefix(l, "/"))
		}
	}
	ignored := func(rel string) bool {
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, rel); ok || rel == p || strings.HasPrefix(rel, p+"/") {
				return true
			}
		}
		return false
	}
	for _, must := range []string{".git", "data", "bin"} {
		if !ignored(must) {
			t.Errorf(".dockerignore does not exclude %s", must)
		}
	}
	keep := []string{"go.mod", "go.sum", "cmd/trending", "infra/docker/probe"}
	for _, k := range keep {
		if ignored(k) {
			t.Errorf(".dockerignore excludes %s, which the build needs", k)
		}
	}
	deps := goListDeps(t)
	for _, d := range deps {
		rel, err := filepath.Rel(root(t), d)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if ignored(rel) {
			t.Errorf(".dockerignore excludes %s, a package the binary is built from", rel)
		}
	}
	if len(deps) < 5 {
		t.Fatalf("go list found only %d packages of the module under ./cmd/trending", len(deps))
	}
}
