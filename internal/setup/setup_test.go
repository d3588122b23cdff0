package setup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
	"github.com/continuum-project/continuum/internal/tools"
)

// repo is the clone these tests run in.
const repo = "../.."

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The core's package list lives in the script (it runs before this binary exists) and here (for
// --status): they must be the same list.
func TestCoreMatchesScript(t *testing.T) {
	m := regexp.MustCompile(`(?m)^CORE_APT=\(([^)]*)\)`).FindStringSubmatch(read(t, Script))
	if m == nil {
		t.Fatalf("%s has no CORE_APT=(...) line", Script)
	}
	if got, want := strings.Fields(m[1]), Core; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s CORE_APT = %v, internal/setup Core = %v: keep them the same", Script, got, want)
	}
}

// Every stack in the catalog has a step in the script (stack_NAME), and every step a stack.
func TestEveryStackHasAScriptStep(t *testing.T) {
	steps := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^stack_([a-z0-9_]+)\(\)`).FindAllStringSubmatch(read(t, Script), -1) {
		steps[m[1]] = true
	}
	for _, s := range Stacks {
		if !steps[s.Name] {
			t.Errorf("stack %s has no stack_%s() in %s", s.Name, s.Name, Script)
		}
		delete(steps, s.Name)
	}
	for s := range steps {
		t.Errorf("%s defines stack_%s(), which the catalog does not list", Script, s)
	}
}

// The versions --status shows are the pinned ones.
func TestVersionsMatchPins(t *testing.T) {
	pins := map[string]struct{ file, text string }{
		"etcd 3.6.16":        {"tools/etcd/go.mod", "go.etcd.io/etcd/server/v3 v3.6.16"},
		"Redis 7.0.15":       {Script, "REDIS_VERSION=7.0.15"},
		"Kafka 4.4.0":        {Script, "KAFKA_VERSION=4.4.0"},
		"firebase 12.19.0":   {"tools/npm-firebase/package.json", `"firebase": "12.19.0"`},
		"Kubernetes v1.37.2": {Script, "KUBE_VERSION=v1.37.2"},
		"helm v4.3.1":        {"tools/helm/go.mod", "helm.sh/helm/v4 v4.3.1"},
		"CoreDNS v1.15.0":    {"tools/coredns/go.mod", "github.com/coredns/coredns v1.15.0"},
		// staticcheck's release 2026.2.2 is module version v0.8.2.
		"staticcheck 2026.2.2": {"tools/lint/go.mod", "honnef.co/go/tools v0.8.2"},
		"govulncheck v1.10.0":  {"tools/lint/go.mod", "golang.org/x/vuln v1.10.0"},
	}
	reqs := map[string]string{"functions": "python/requirements.txt", "fl": "python/requirements-fl.txt"}
	for _, s := range Stacks {
		for _, part := range strings.Split(s.Version, ", ") {
			if strings.HasPrefix(part, "Debian's ") {
				continue
			}
			p, ok := pins[part]
			if req, isPy := reqs[s.Name]; isPy && !ok {
				name, ver, _ := strings.Cut(part, " ")
				p, ok = struct{ file, text string }{req, name + "==" + ver}, true
			}
			if !ok {
				t.Errorf("stack %s: version %q: the test does not know where it is pinned", s.Name, part)
				continue
			}
			if !strings.Contains(read(t, p.file), p.text) {
				t.Errorf("stack %s says %q but %s does not pin %q", s.Name, part, p.file, p.text)
			}
		}
	}
}

func TestResolve(t *testing.T) {
	got, err := Resolve([]string{"faas", "fl", "functions"})
	if err != nil || len(got) != 2 || got[0].Name != "functions" || got[1].Name != "fl" {
		t.Fatalf("Resolve(faas fl functions) = %v, %v; want functions, fl once each in catalog order", got, err)
	}
	all, _ := Resolve([]string{"all"})
	if len(all) != len(Stacks) {
		t.Errorf("all = %d stacks, want %d", len(all), len(Stacks))
	}
	if _, err := Resolve([]string{"torch"}); err == nil || !strings.Contains(err.Error(), "baselines") {
		t.Errorf("unknown stack: err = %v, want one listing the stacks", err)
	}
}

// fakeHost is a clone with a scripts/setup.sh of the test's making and an empty setup cache,
// checked with a dpkg that has every package.
type fakeHost struct {
	root, cache string
	checker     Checker
}

func newFakeHost(t *testing.T, script string) fakeHost {
	t.Helper()
	h := fakeHost{root: t.TempDir(), cache: t.TempDir()}
	if err := os.WriteFile(filepath.Join(h.root, "go.mod"), []byte("module github.com/continuum-project/continuum\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.root, Script), []byte("#!/usr/bin/env bash\nset -euo pipefail\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	h.checker = Checker{Finder: tools.Finder{WD: h.root, Cache: h.cache}, Dpkg: func(pkgs []string) map[string]bool {
		m := map[string]bool{}
		for _, p := range pkgs {
			m[p] = true
		}
		return m
	}}
	return h
}

func (h fakeHost) installer(out *bytes.Buffer) *Installer {
	return &Installer{Root: h.root, Out: out, Cache: h.cache, Checker: h.checker,
		Apt: func(context.Context, ...string) error { return errors.New("no apt in tests") }}
}

// makeFLVenv is a script step that builds the fl stack as setup does: a venv-fl-<hash>-py<v>
// in the cache, linked as .tools/venv-fl; it compiles three "packages" on the way.
const makeFLVenv = `[ "$1 $2" = "--stack fl" ] || { echo "unexpected $*" >&2; exit 2; }
d="$CONTINUUM_CACHE/venv-fl-0123456789abcdef-py3.11"
mkdir -p "$d/bin" .tools
echo "setup: creating the Python venv venv-fl in $d"
for p in a b c; do echo "progress: pkg example.org/$p"; done
rm -f "$d/bin/python" # never write through a link
head -c 100000 /dev/zero >"$d/bin/python"
touch "$d/.complete" # the script's stamp, written last
ln -sfn "$d" .tools/venv-fl
`

func TestEnsureStopsAtOnceNamingTheCommand(t *testing.T) {
	h := newFakeHost(t, "echo ran >\"$CONTINUUM_CACHE/ran\"\n")
	t.Setenv(AutoEnv, "")
	var out bytes.Buffer
	err := Ensure(context.Background(), []string{"fl"}, EnsureOptions{Who: "scenario x.yaml", Out: &out, Checker: &h.checker, Root: h.root})
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("Ensure = %v, want ErrMissing", err)
	}
	for _, want := range []string{"scenario x.yaml needs a stack not installed", "fl: the Python venv", "GiB", "min", ".tools/venv-fl/bin/python", "`continuum setup fl`", AutoEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.cache, "ran")); err == nil {
		t.Error("the script ran, though nothing said yes")
	}
	// At a terminal, "n" (or nothing) is a no.
	err = Ensure(context.Background(), []string{"fl"}, EnsureOptions{Who: "x", Out: &out, Checker: &h.checker, Root: h.root,
		Interactive: true, In: strings.NewReader("\n")})
	if !errors.Is(err, ErrMissing) || !strings.Contains(out.String(), "Install now with `continuum setup fl`? [y/N]") {
		t.Errorf("prompt answered empty: err %v, output %q", err, out.String())
	}
	if err := Ensure(context.Background(), []string{"nosuch"}, EnsureOptions{Checker: &h.checker}); err == nil || errors.Is(err, ErrMissing) {
		t.Errorf("unknown stack: %v, want a usage error", err)
	}
	if err := Ensure(context.Background(), nil, EnsureOptions{Checker: &h.checker}); err != nil {
		t.Errorf("no stacks needed: %v", err)
	}
}

func TestEnsureInstallsWhenAskedWithProgress(t *testing.T) {
	for _, how := range []string{"yes", "env", "prompt"} {
		t.Run(how, func(t *testing.T) {
			h := newFakeHost(t, makeFLVenv)
			o := EnsureOptions{Who: "x", Checker: &h.checker, Root: h.root}
			var out bytes.Buffer
			o.Out = &out
			t.Setenv(AutoEnv, "")
			switch how {
			case "yes":
				o.Yes = true
			case "env":
				t.Setenv(AutoEnv, "1")
			case "prompt":
				o.Interactive, o.In = true, strings.NewReader("y\n")
			}
			if err := Ensure(context.Background(), []string{"fl"}, o); err != nil {
				t.Fatalf("Ensure: %v\n%s", err, out.String())
			}
			if st := h.checker.Status([]Stack{mustLookup(t, "fl")})[0]; !st.Installed() {
				t.Fatalf("after Ensure, fl still misses %s", st.Missing())
			}
			if strings.Contains(out.String(), "progress:") {
				t.Errorf("the script's progress lines were printed rather than counted:\n%s", out.String())
			}
			if !strings.Contains(out.String(), "setup fl: installing") || !strings.Contains(out.String(), "creating the Python venv") {
				t.Errorf("output lacks the install's lines:\n%s", out.String())
			}
		})
	}
}

func mustLookup(t *testing.T, name string) Stack {
	t.Helper()
	s, ok := Lookup(name)
	if !ok {
		t.Fatalf("no stack %s", name)
	}
	return s
}

func TestProgressLineCountsPackagesAndBytes(t *testing.T) {
	h := newFakeHost(t, makeFLVenv)
	var out bytes.Buffer
	in := h.installer(&out)
	p := in.startProgress("fl", timeZero(), estimate{Time: 4 * 60e9, Packages: 10})
	if err := in.runScript(context.Background(), "fl", p); err != nil {
		t.Fatal(err)
	}
	line := p.line()
	p.stop()
	for _, want := range []string{"setup fl: ", "of ~4 min", "KiB written", "3 of ~10 Go packages compiled"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
}

func TestInstallIsNeverHalf(t *testing.T) {
	// The script "succeeds" but leaves no venv: Install says what is missing.
	h := newFakeHost(t, "echo did nothing\n")
	var out bytes.Buffer
	err := h.installer(&out).Install(context.Background(), []Stack{mustLookup(t, "fl")})
	if err == nil || !strings.Contains(err.Error(), "still missing .tools/venv-fl/bin/python") {
		t.Errorf("Install = %v, want it to name what is still missing", err)
	}
	// The script fails: the error carries its last lines.
	h = newFakeHost(t, "echo compiling; echo 'progress: pkg x'; echo 'boom: no space left' >&2; exit 3\n")
	err = h.installer(&out).Install(context.Background(), []Stack{mustLookup(t, "fl")})
	if err == nil || !strings.Contains(err.Error(), "boom: no space left") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Install = %v, want the script's failure with its last lines", err)
	}
	// Missing Debian packages without root, or apt failing, stop before the script.
	h = newFakeHost(t, makeFLVenv)
	h.checker.Dpkg = func([]string) map[string]bool { return nil }
	in := h.installer(&out)
	err = in.Install(context.Background(), []Stack{mustLookup(t, "fl")})
	if err == nil || (!strings.Contains(err.Error(), "no apt in tests") && !strings.Contains(err.Error(), "needs root")) {
		t.Errorf("Install without its Debian packages = %v, want apt's failure", err)
	}
	if _, err := os.Stat(filepath.Join(h.root, ".tools", "venv-fl")); err == nil {
		t.Error("the script ran although the Debian packages could not be installed")
	}
}

func TestInstallRecordsThisMachinesTime(t *testing.T) {
	h := newFakeHost(t, makeFLVenv)
	in := h.installer(&bytes.Buffer{})
	in.record("fl", history{Seconds: 123, Packages: 7})
	e := in.estimate(mustLookup(t, "fl"))
	if !e.measured || e.Time.Seconds() != 123 || e.Packages != 7 {
		t.Errorf("estimate after a recorded install = %+v, want 123 s, 7 packages, measured", e)
	}
	// A damaged history only loses the estimate.
	if err := os.WriteFile(filepath.Join(h.cache, historyFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := in.estimate(mustLookup(t, "fl")); e.measured || e.Time != mustLookup(t, "fl").Time {
		t.Errorf("estimate from a damaged history = %+v, want the catalog's", e)
	}
}

func TestStatusWhereAndSize(t *testing.T) {
	h := newFakeHost(t, makeFLVenv)
	if err := h.installer(&bytes.Buffer{}).Install(context.Background(), []Stack{mustLookup(t, "fl")}); err != nil {
		t.Fatal(err)
	}
	// A venv's bin/python links out of the venv (to the system's python; here a file of the
	// test's own): the entry is still the venv's cache directory.
	py := filepath.Join(h.cache, "venv-fl-0123456789abcdef-py3.11", "bin", "python")
	if err := os.Remove(py); err != nil {
		t.Fatal(err)
	}
	system := filepath.Join(t.TempDir(), "python3.11")
	if err := os.WriteFile(system, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(system, py); err != nil {
		t.Fatal(err)
	}
	c := h.checker
	c.Sizes = true
	st := c.Status([]Stack{mustLookup(t, "fl")})[0]
	want := filepath.Join(h.cache, "venv-fl-0123456789abcdef-py3.11")
	if r, err := filepath.EvalSymlinks(h.cache); err == nil {
		want = filepath.Join(r, "venv-fl-0123456789abcdef-py3.11")
	}
	if !st.Installed() || len(st.Where) != 1 || st.Where[0] != want || st.Bytes <= 0 {
		t.Errorf("status = %+v, want installed in %s with a size", st, want)
	}
	// Without .tools in the clone the cache still counts (a fresh clone on a warm machine),
	// and Install links it again.
	if err := os.RemoveAll(filepath.Join(h.root, ".tools")); err != nil {
		t.Fatal(err)
	}
	if !h.checker.Status([]Stack{mustLookup(t, "fl")})[0].Installed() {
		t.Error("a stack in the cache but not linked in the clone counts as missing")
	}
	var out bytes.Buffer
	if err := h.installer(&out).Install(context.Background(), []Stack{mustLookup(t, "fl")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.root, ".tools", "venv-fl")); err != nil || !strings.Contains(out.String(), "linking it into") {
		t.Errorf("Install of a cached stack did not link it (%v):\n%s", err, out.String())
	}
}

func timeZero() time.Time { return time.Now() }

// The history's temporary file is the installer's own: a link planted in its place (the cache
// may be shared, or a damaged earlier run's) is replaced, never written through.
func TestRecordWritesThroughNoLink(t *testing.T) {
	h := newFakeHost(t, "")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(h.cache, historyFile+".tmp")); err != nil {
		t.Fatal(err)
	}
	in := h.installer(&bytes.Buffer{})
	in.record("fl", history{Seconds: 42})
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("record wrote through the link %s.tmp: the file it points to now holds %q", historyFile, b)
	}
	if e := in.estimate(mustLookup(t, "fl")); !e.measured || e.Time.Seconds() != 42 {
		t.Errorf("estimate after record = %+v, want the recorded 42 s", e)
	}
}

// A venv whose pip install was interrupted has its bin/python but not the .complete stamp the
// script writes last: the stack is missing, in the cache and through a clone's .tools link alike.
func TestHalfBuiltVenvIsMissing(t *testing.T) {
	h := newFakeHost(t, "")
	d := filepath.Join(h.cache, "venv-fl-0123456789abcdef-py3.11")
	if err := os.MkdirAll(filepath.Join(d, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "bin", "python"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st := h.checker.Status([]Stack{mustLookup(t, "fl")})[0]; st.Installed() {
		t.Errorf("a venv without .complete (pip interrupted) counts as installed: %+v", st.Where)
	}
	if err := os.MkdirAll(filepath.Join(h.root, ".tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d, filepath.Join(h.root, ".tools", "venv-fl")); err != nil {
		t.Fatal(err)
	}
	if st := h.checker.Status([]Stack{mustLookup(t, "fl")})[0]; st.Installed() {
		t.Errorf("a half-built venv linked from .tools counts as installed: %+v", st.Where)
	}
	if err := os.WriteFile(filepath.Join(d, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := h.checker.Status([]Stack{mustLookup(t, "fl")})[0]; !st.Installed() {
		t.Errorf("the whole venv counts as missing: %s", st.Missing())
	}
}

// Cancelling the context (Ctrl-C, SIGTERM) ends the script's step at once, the processes it
// started included, though they hold its output open; the stack is not counted.
func TestInstallCancelKillsTheStep(t *testing.T) {
	h := newFakeHost(t, `sleep 300 & echo $! >"$CONTINUUM_CACHE/child"; wait
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testenv.SyncBuffer
	in := h.installer(nil)
	in.Out = &out
	done := make(chan error, 1)
	go func() { done <- in.Install(ctx, []Stack{mustLookup(t, "fl")}) }()
	var pid int
	testenv.Eventually(t, 10*time.Second, "the script's child to start", func() bool {
		b, err := os.ReadFile(filepath.Join(h.cache, "child"))
		if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Install after cancel = nil, want an error")
		}
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("Install still waiting 20 s after its context was cancelled: the script's child holds its output open")
	}
	testenv.Eventually(t, 10*time.Second, "the script's child to be killed", func() bool { return syscall.Kill(pid, 0) != nil })
	if st := h.checker.Status([]Stack{mustLookup(t, "fl")})[0]; st.Installed() {
		t.Error("the cancelled stack counts as installed")
	}
}

// A line longer than any buffer (a script dumping 2 MB on one line) neither stops the reading
// nor hides what the script prints after it: the failure's last lines still say why.
func TestScriptsHugeLineKeepsTheRest(t *testing.T) {
	h := newFakeHost(t, `head -c 2097152 /dev/zero | tr '\0' x; echo
echo 'progress: pkg after'
echo 'boom: the real error' >&2; exit 4
`)
	var out bytes.Buffer
	in := h.installer(&out)
	p := in.startProgress("fl", time.Now(), estimate{Time: time.Minute})
	err := in.runScript(context.Background(), "fl", p)
	p.stop()
	if err == nil || !strings.Contains(err.Error(), "boom: the real error") {
		t.Errorf("runScript = %v, want the error's last lines to hold the line after the 2 MB one", err)
	}
	if p.packages() != 1 {
		t.Errorf("packages counted = %d, want the 1 after the long line", p.packages())
	}
	if out.Len() > 1<<20 {
		t.Errorf("printed %d bytes for one line: an over-long line should be cut", out.Len())
	}
}

// A relative $CONTINUUM_CACHE is relative to where the command runs; the script runs in the
// clone: it must get the same directory, or what it builds is found by nobody (and its links
// dangle) and every install ends "still missing".
func TestRelativeCacheIsTheSameForTheScript(t *testing.T) {
	h := newFakeHost(t, makeFLVenv)
	wd := t.TempDir()
	t.Chdir(wd)
	h.cache = "cache"
	h.checker.Finder = tools.Finder{WD: wd, Cache: h.cache}
	var out bytes.Buffer
	if err := h.installer(&out).Install(context.Background(), []Stack{mustLookup(t, "fl")}); err != nil {
		t.Fatalf("Install with CONTINUUM_CACHE=cache from %s: %v\n%s", wd, err, out.String())
	}
	if _, err := os.Stat(filepath.Join(h.root, ".tools", "venv-fl", "bin", "python")); err != nil {
		t.Errorf("the clone's .tools/venv-fl does not lead to the venv: %v", err)
	}
}

// After a pull that bumps a stack's pins (a new requirements file, go.sum, Kafka version), the
// clone's .tools still links the old build, which Status counts as installed. `continuum setup`
// (make setup) must still run the script's step, which keys the cache by the pins and rebuilds;
// otherwise the old build is kept for ever.
func TestSetupRunsTheStepAfterAPinBump(t *testing.T) {
	h := newFakeHost(t, makeFLVenv)
	old := filepath.Join(h.cache, "venv-fl-aaaaaaaaaaaaaaaa-py3.11")
	if err := os.MkdirAll(filepath.Join(old, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"bin/python", ".complete"} {
		if err := os.WriteFile(filepath.Join(old, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(h.root, ".tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(old, filepath.Join(h.root, ".tools", "venv-fl")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := h.installer(&out).Install(context.Background(), []Stack{mustLookup(t, "fl")}); err != nil {
		t.Fatalf("Install: %v\n%s", err, out.String())
	}
	want := filepath.Join(h.cache, "venv-fl-0123456789abcdef-py3.11")
	if got, _ := os.Readlink(filepath.Join(h.root, ".tools", "venv-fl")); got != want {
		t.Errorf(".tools/venv-fl -> %s after setup, want the pinned build %s: the script's step did not run\n%s", got, want, out.String())
	}
}

// The dry run's estimate says where it comes from: the catalog's 2-core machine until this
// machine has installed the stack once, and a crafted or damaged history (a negative or absurd
// time) is no estimate at all.
func TestPlanSaysWhereTheEstimateComesFrom(t *testing.T) {
	h := newFakeHost(t, "")
	in := h.installer(&bytes.Buffer{})
	if got := strings.Join(in.Plan([]Stack{mustLookup(t, "fl")}), "\n"); !strings.Contains(got, "~"+humanDuration(mustLookup(t, "fl").Time)+" on a 2-core machine") {
		t.Errorf("Plan with no history here = %q, want the catalog's time named as a 2-core machine's", got)
	}
	for _, bad := range []string{`{"fl": {"seconds": 1e300}}`, `{"fl": {"seconds": 30, "packages": -5}}`} {
		if err := os.WriteFile(filepath.Join(h.cache, historyFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if e := in.estimate(mustLookup(t, "fl")); e.measured || e.Time != mustLookup(t, "fl").Time {
			t.Errorf("estimate from the history %s = %+v, want the catalog's", bad, e)
		}
	}
	in.record("fl", history{Seconds: 150})
	if got := strings.Join(in.Plan([]Stack{mustLookup(t, "fl")}), "\n"); !strings.Contains(got, "~3 min as the last install here took") {
		t.Errorf("Plan after an install here = %q, want this machine's time", got)
	}
}

// Kafka is installed when its jars are: a libs folder without kafka_2.13-*.jar (what the script
// and the broker's lookup check) is missing, not installed.
func TestKafkaWithoutItsJarIsMissing(t *testing.T) {
	h := newFakeHost(t, "")
	for _, d := range []string{"kafka-4.4.0-0123456789abcdef/libs", "npm-firebase-12.19.0-0123456789abcdef/node_modules/firebase"} {
		if err := os.MkdirAll(filepath.Join(h.cache, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if st := h.checker.Status([]Stack{mustLookup(t, "stream")})[0]; st.Installed() {
		t.Errorf("Kafka's libs without its jar counts as installed: %v", st.Where)
	}
	jar := filepath.Join(h.cache, "kafka-4.4.0-0123456789abcdef/libs/kafka_2.13-4.4.0.jar")
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := h.checker.Status([]Stack{mustLookup(t, "stream")})[0]; !st.Installed() {
		t.Errorf("Kafka with its jar counts as missing: %s", st.Missing())
	}
}

// A tool's terminal escapes (Maven prints "\x1b[0m" with colours off) are not passed through.
func TestScriptEscapesDropped(t *testing.T) {
	h := newFakeHost(t, `printf '\033[0m\033[0msetup: resolving Kafka\033[1;31m\n'`+"\n")
	var out bytes.Buffer
	in := h.installer(&out)
	p := in.startProgress("stream", timeZero(), estimate{})
	err := in.runScript(context.Background(), "stream", p)
	p.stop()
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "setup: resolving Kafka\n" {
		t.Errorf("printed %q, want the line without its escapes", got)
	}
}

func TestAutoSetupValues(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "YES": true, " yes ": true, "": false, "0": false, "no": false, "false": false, "2": false} {
		t.Setenv(AutoEnv, v)
		if got := autoSetup(); got != want {
			t.Errorf("%s=%q: autoSetup = %v, want %v", AutoEnv, v, got, want)
		}
	}
}
