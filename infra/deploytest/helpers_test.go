package deploytest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// reporter is the part of testing.TB the checks use, so a test can run them against a
// recorder and see that they fail on a broken file.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// recorder is a reporter that only remembers whether it failed; Fatalf ends the goroutine,
// as testing's does, so run the check with record.
type recorder struct {
	failed bool
	msgs   []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// record runs check against a recorder in its own goroutine and returns the recorder.
func record(check func(reporter)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r
}

// root is the repository root (this package is infra/deploytest).
func root(t reporter) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatalf("cannot locate the test file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// dockerfile is the repository's Dockerfile, parsed into instructions.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string // the rest, continuation lines joined
	line int
}

type stage struct {
	from, name string
	instr      []instruction
}

func parseDockerfile(t reporter, path string) (args map[string]string, stages []*stage) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	args = map[string]string{}
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	n := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		cmd, rest, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(rest), line: start}
		switch in.cmd {
		case "FROM":
			f := strings.Fields(in.args)
			s := &stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
		case "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			if _, seen := args[k]; !seen || v != "" {
				args[k] = v
			}
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
		}
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if cur.Len() == 0 && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(trim, `\`) {
			cur.WriteString(strings.TrimSuffix(trim, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(trim)
		flush()
	}
	flush()
	return args, stages
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// trendingBinary builds ./cmd/trending once, with the Dockerfile's own go build command
// (see TestDockerfile), into a temporary directory shared by the package's tests.
func trendingBinary(t reporter) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deploytest")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "trending")
		build := dockerBuildCommand(t, "./cmd/trending")
		binErr = runBuild(root(t), build, binPath)
	})
	if binErr != nil {
		t.Fatalf("build trending as the Dockerfile does: %v", binErr)
	}
	return binPath
}

// dockerBuildCommand returns the arguments of the Dockerfile's `go build ... PKG` command
// (environment assignments included), with ${VAR} replaced by the ARG defaults.
func dockerBuildCommand(t reporter, pkg string) []string {
	t.Helper()
	args, stages := parseDockerfile(t, filepath.Join(root(t), "Dockerfile"))
	for _, s := range stages {
		for _, in := range s.instr {
			if in.cmd != "RUN" {
				continue
			}
			for _, part := range strings.Split(in.args, "&&") {
				f := shellFields(expand(part, args))
				i := slices.Index(f, "go")
				if i < 0 || i+1 >= len(f) || f[i+1] != "build" || f[len(f)-1] != pkg {
					continue
				}
				// Drop the RUN flags (--mount=...) before the command.
				j := 0
				for j < len(f) && strings.HasPrefix(f[j], "--") {
					j++
				}
				return f[j:]
			}
		}
	}
	t.Fatalf("the Dockerfile has no RUN ... go build ... %s", pkg)
	return nil
}

var varRe = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)

func expand(s string, args map[string]string) string {
	return varRe.ReplaceAllStringFunc(s, func(m string) string {
		k := strings.Trim(m, "${}")
		if v, ok := args[k]; ok {
			return v
		}
		return m
	})
}

// shellFields splits a command line on spaces, keeping double-quoted strings together.
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	in, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, any = !in, true
		case r == ' ' && !in:
			if any || cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(r)
		}
	}
	if any || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// runBuild runs a `[VAR=value ...] go build ... -o OUT PKG` command in dir with the
// output redirected to out.
func runBuild(dir string, f []string, out string) error {
	env := os.Environ()
	i := 0
	for ; i < len(f) && strings.Contains(f[i], "=") && !strings.HasPrefix(f[i], "-"); i++ {
		env = append(env, f[i])
	}
	cmdArgs := slices.Clone(f[i+1:]) // after "go"
	if k := slices.Index(cmdArgs, "-o"); k >= 0 && k+1 < len(cmdArgs) {
		cmdArgs[k+1] = out
	} else {
		return fmt.Errorf("build command %q has no -o", f)
	}
	cmd := exec.Command("go", cmdArgs...)
	cmd.Dir, cmd.Env = dir, env
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %v\n%s", f, err, b)
	}
	return nil
}

// help is what `trending PATH --help` says about a subcommand.
type help struct {
	runnable bool            // the usage line takes [flags], not only [command]
	flags    map[string]bool // flag name -> takes a value (false for booleans)
}

var (
	helpMu    sync.Mutex
	helpCache = map[string]help{}
	flagRe    = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)(?: (\w+))?\s`)
)

// helpOf runs `trending PATH... --help` and parses its flags, global ones included.
func helpOf(t reporter, path []string) help {
	t.Helper()
	key := strings.Join(path, " ")
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helpCache[key]; ok {
		return h
	}
	out, err := exec.Command(trendingBinary(t), append(slices.Clone(path), "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("trending %s --help: %v\n%s", key, err, out)
	}
	h := help{flags: map[string]bool{}}
	usage := false
	for _, l := range strings.Split(string(out), "\n") {
		if usage && strings.HasPrefix(strings.TrimSpace(l), "trending "+key+" [flags]") {
			h.runnable = true
		}
		usage = usage || l == "Usage:"
		if m := flagRe.FindStringSubmatch(l); m != nil {
			h.flags[m[1]] = m[2] != ""
		}
	}
	helpCache[key] = h
	return h
}

// envFlag maps TRENDING_SKETCH_WIDTH to sketch-width (config.go's envName, reversed).
func envFlag(env string) (string, bool) {
	rest, ok := strings.CutPrefix(env, "TRENDING_")
	if !ok {
		return "", false
	}
	return strings.ReplaceAll(strings.ToLower(rest), "_", "-"), true
}

// otherEnv are the variables a trending container may set that are not TRENDING_*: the
// Go runtime's and the AWS default credential chain's.
var otherEnv = regexp.MustCompile(`^(GOMEMLIMIT|GOMAXPROCS|GOGC|AWS_[A-Z_]+)$`)

// checkContainer checks one container's arguments and environment against the binary:
// args[0:] is a runnable subcommand path followed by flags that exist with a valid value
// (the binary parses them: `trending ARGS --help` must succeed), and every variable is a flag
// of that subcommand or a global one.
func checkContainer(t reporter, where string, args []string, env []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no command: the image's entrypoint is trending and needs a subcommand", where)
		return
	}
	var path []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		path = append(path, a)
	}
	h := helpOf(t, path)
	if !h.runnable {
		t.Errorf("%s: `trending %s` is not a command that runs (it only groups subcommands)", where, strings.Join(path, " "))
		return
	}
	rest := args[len(path):]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "--") {
			t.Errorf("%s: stray argument %q: trending %s takes flags only", where, a, strings.Join(path, " "))
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		takes, ok := h.flags[name]
		if !ok {
			t.Errorf("%s: trending %s has no flag --%s", where, strings.Join(path, " "), name)
			continue
		}
		if takes && !hasValue {
			i++ // the value
		}
	}
	// The binary itself parses the values (durations, sizes, numbers).
	if out, err := exec.Command(trendingBinary(t), append(slices.Clone(args), "--help")...).CombinedOutput(); err != nil {
		t.Errorf("%s: trending %s --help: %v\n%s", where, strings.Join(args, " "), err, out)
	}
	for _, e := range env {
		if otherEnv.MatchString(e) {
			continue
		}
		flag, ok := envFlag(e)
		if !ok {
			t.Errorf("%s: variable %s is read by nothing: trending reads TRENDING_<FLAG>", where, e)
			continue
		}
		if _, ok := h.flags[flag]; !ok {
			t.Errorf("%s: %s: trending %s has no flag --%s, so the variable is ignored", where, e, strings.Join(path, " "), flag)
		}
	}
}

// secretish reports whether a variable holds a credential by its name.
func secretish(name string) bool {
	for _, s := range []string{"PASSWORD", "SECRET", "TOKEN"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// goListDeps returns the directories of this module's packages that ./cmd/trending and the
// probe are built from.
func goListDeps(t reporter) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./cmd/trending", "./infra/docker/probe")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Fields(string(out))
}

// runBin runs the built binary and returns its standard output.
func runBin(t reporter, args ...string) string {
	t.Helper()
	out, err := exec.Command(trendingBinary(t), args...).Output()
	if err != nil {
		t.Fatalf("trending %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
