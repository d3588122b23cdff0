package main

// The README's "A short tour", run as a user would: every command line of its block, in order,
// from the clone's root. A line that takes seconds runs as written; a line whose full run takes
// minutes to half an hour (a scenario, a benchmark) runs in a checked form of the same line
// (`run --check`, a bench's --quick); a server starts, is seen serving and is stopped. A line the
// table below does not know fails the test, and so does an entry whose line left the README: the
// tour and its test change together, so a README line cannot silently break (issue 42).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// tourStep checks one line of the tour; line is the command as the README writes it, without
// its comment.
type tourStep func(tr *tourRun, line string)

// tourSteps is every line of the tour and how it is checked. Keyed by the exact line: a changed
// line fails the test until its entry is changed with it.
var tourSteps = map[string]tourStep{
	"make build": asWritten,
	"bin/continuum testbed up -f scenarios/topologies/three-tier.yaml --name lab": asWritten,
	"bin/continuum testbed exec --name lab device -- ping -c 3 edge":              asWritten,
	"bin/continuum testbed fault --name lab partition --node cloud":               asWritten,
	"bin/continuum testbed fault --name lab heal":                                 asWritten,
	"bin/continuum testbed status --name lab":                                     asWritten,
	"bin/continuum testbed down --name lab":                                       testbedDown("lab", "device", "edge", "cloud"),
	"bin/continuum run scenarios/quickstart.yaml --out results":                   runQuickstart,
	"bin/continuum report results/quickstart-<timestamp>":                         reportAgain,
	"bin/continuum bench testbed --out results/testbed.md":                        quick("--quick", "--only", "accuracy"),

	kvLine: serve(kvURL),
	"bin/continuum bench kv --out results/kv-single-node.md":                                                                         quick("--quick"),
	"bin/continuum bench kv --stores kv,etcd --maintenance --closed-clients 0 --footprint-records 0 --out results/kv-maintenance.md": quick("--quick"),
	"bin/continuum bench kube-store --out results/kubernetes.md":                                                                     quick("--quick", "--restart-downs", "0s"),
	"bin/continuum run scenarios/kv/cluster-3.yaml --repeats 3":                                                                      checked,
	"bin/continuum run scenarios/kv/partition.yaml":                                                                                  checked,
	"bin/continuum run --check scenarios/kv/partition.yaml":                                                                          asWritten,
	"bin/continuum run --only etcd scenarios/kv/partition.yaml":                                                                      checked,

	paceConsumer: paceLoop,
	paceProducer: ranWith(paceConsumer),
	"bin/continuum run scenarios/shareddata/distributed-1x.yaml":   checked,
	"bin/continuum run scenarios/shareddata/maintenance-etcd.yaml": checked,
	"bin/continuum run scenarios/shareddata/failover.yaml":         checked,

	gatewayLine:               serve(gatewayURL),
	"bin/continuum faas list": withServer(gatewayLine, gatewayURL, "hello"),
	"bin/continuum run scenarios/iot/scenario-a.yaml":          checked,
	"bin/continuum run scenarios/iot/scenario-b.yaml":          checked,
	"bin/continuum run scenarios/iot/mqtt-ingress.yaml":        checked,
	"bin/continuum bench coldstart --out results/coldstart.md": quick("--runs", "1"),

	proxyLine: serve("http://127.0.0.1:9090/readyz"),
	"bin/continuum run scenarios/proxy/dynamic.yaml": checked,

	"bin/continuum fl plan --topology scenarios/fl/seed-topology.csv --remove n9": asWritten,
	"bin/continuum run scenarios/fl/seed-orchestration.yaml":                      checked,
	"bin/continuum run scenarios/fl/seed-orchestration-small.yaml":                checked,

	"bin/continuum run scenarios/app/process.yaml": asWritten,
	composeLine: compose,

	imageBuild: ranWith(composeLine),
	"bin/continuum cluster up --image images/continuum.tar --image images/proxy.tar --image images/python.tar": clusterUp,
	"export KUBECONFIG=$(bin/continuum cluster status --kubeconfig)":                                           export,
	".tools/bin/helm install continuum deploy/helm/continuum --wait --timeout 5m":                              asWritten,
	"bin/continuum run --platform kubernetes --pull-policy Never scenarios/kubernetes/quickstart.yaml":         asWritten,
	"bin/continuum cluster down": clusterDown,
	"make test-kubernetes":       chartEndToEnd,
}

// The PACE lines: a consumer in the background, then a producer in the same group, on the kv
// line's server.
const (
	paceConsumer = "bin/continuum pace consumer --backend etcd --endpoints http://127.0.0.1:2379 --group g1 --id c1 --class wave --out /tmp/c1 &"
	paceProducer = "bin/continuum pace producer --backend etcd --endpoints http://127.0.0.1:2379 --group g1 --id p1 --class wave --out /tmp/p1"
	kvLine       = "bin/continuum kv --name a --data-dir /tmp/a.kv --listen-client-urls http://127.0.0.1:2379"
	kvURL        = "http://127.0.0.1:2379/health"
	// faas list talks to the gateway of the line above it (/system/ answers 401 without auth).
	gatewayLine = "bin/continuum faas gateway --function name=hello,handler=python/functions/hello,min=0,idle_timeout=30s,zygote=true"
	gatewayURL  = "http://127.0.0.1:8080/system/functions"
	// The proxy's clients' port is :8080, as the gateway's: their sections run one after the other.
	proxyLine = "(cd examples/proxy && ../../bin/continuum proxy --config proxy.yaml)"
	// The Kubernetes block's image build is the compose line's first command; it runs once.
	imageBuild  = "bin/continuum image build --out images/"
	composeLine = imageBuild + " && bin/continuum run examples/compose/notes/compose.yaml"
)

// TestREADMETourSections: the README's tour splits into sections that run side by side, with
// the lines that share state in one, in the README's order.
func TestREADMETourSections(t *testing.T) {
	sections := joinSections(tourSections(t, filepath.Join("..", "..", "README.md")), tourTogether)
	if len(sections) < 4 {
		t.Errorf("%d sections, want the tour's blocks side by side: %q", len(sections), sections)
	}
	for _, pair := range tourTogether {
		i := slices.IndexFunc(sections, func(sec []string) bool { return slices.Contains(sec, pair[0]) })
		if i < 0 || slices.Index(sections[i], pair[1]) < slices.Index(sections[i], pair[0]) {
			t.Errorf("%q then %q are not in one section in order: %q", pair[0], pair[1], sections)
		}
	}
	var flat []string
	for _, sec := range sections {
		flat = append(flat, sec...)
	}
	if lines := tourLines(t, filepath.Join("..", "..", "README.md")); len(flat) != len(lines) {
		t.Errorf("the sections hold %d lines, the tour %d", len(flat), len(lines))
	}
	// make test runs the section that brings up a cluster in its clusters' lane and the rest
	// beside it (the Makefile's TOUR_CLUSTER, a -run pattern of that section's name): the
	// pattern must name it, or the tour's cluster would come up beside the lane's.
	i := slices.IndexFunc(sections, func(sec []string) bool {
		return slices.ContainsFunc(sec, func(l string) bool { return strings.Contains(l, "cluster up") })
	})
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TOUR_CLUSTER\s*:=\s*(\S+)$`).FindSubmatch(mk)
	if i < 0 || m == nil {
		t.Fatalf("no tour section with `cluster up` (%d) or no TOUR_CLUSTER in the Makefile", i)
	}
	levels := strings.Split(strings.ReplaceAll(string(m[1]), "$$", "$"), "/")
	name := strings.Split("TestREADMETour/sections/"+strings.ReplaceAll(sections[i][0], " ", "_"), "/")
	for k, re := range levels {
		if k >= len(name) || !regexp.MustCompile(re).MatchString(name[k]) {
			t.Errorf("the Makefile's TOUR_CLUSTER %s does not name the tour's section with `cluster up` (%q)", m[1], sections[i][0])
			break
		}
	}
	got := joinSections([][]string{{"a", "b"}, {"c", "d"}, {"e"}}, [][2]string{{"b", "d"}})
	if fmt.Sprint(got) != "[[a] [b c d] [e]]" {
		t.Errorf("joinSections = %q, want [[a] [b c d] [e]]", got)
	}
}

// TestREADMETourLinesKnown: every line of the tour has an entry in tourSteps and every entry a
// line. It needs neither root nor time, so it holds under -short too.
func TestREADMETourLinesKnown(t *testing.T) {
	knownTourLines(t, tourLines(t, filepath.Join("..", "..", "README.md")))
}

func knownTourLines(t *testing.T, lines []string) {
	t.Helper()
	var unknown []string
	for _, l := range lines {
		if tourSteps[l] == nil {
			unknown = append(unknown, l)
		}
	}
	for l := range tourSteps {
		if !slices.Contains(lines, l) {
			t.Errorf("the test checks a line the README's tour no longer has (remove its entry): %s", l)
		}
	}
	if len(unknown) > 0 {
		t.Fatalf("the README's tour has lines this test does not know how to check; add each to tourSteps:\n%s", strings.Join(unknown, "\n"))
	}
}

// tourTogether are pairs of lines whose sections share state, so run as one section, in order:
// the kv line's server port (2379) is the PACE lines' too, the gateway and the proxy both listen
// on :8080 (side by side, whichever bound it first answered the other's clients: a make test run
// saw `faas list` get the proxy's 400), and the Kubernetes block's cluster loads the images the
// compose line built.
var tourTogether = [][2]string{{kvLine, paceConsumer}, {gatewayLine, proxyLine}, {composeLine, imageBuild}}

// TestREADMETour runs the README's tour (see the top of this file). `make build` runs first; then
// the tour's sections (its blank-line separated blocks, joined per tourTogether) run side by
// side, each one's lines in order: they share nothing else (servers on different ports,
// testbeds by name in this test's state directory, results under different names) and most of
// their time is spent waiting on servers, runs and the cluster, not on the CPU.
func TestREADMETour(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	lines := tourLines(t, readme)
	knownTourLines(t, lines)
	if t.Failed() {
		return
	}
	sections := joinSections(tourSections(t, readme), tourTogether)
	if sections[0][0] != "make build" {
		t.Fatalf("the tour starts with %q, want make build (every later line runs its binary)", sections[0][0])
	}
	tr := newTourRun(t, root)
	tr.runLines(t, []string{"make build"})
	sections[0] = sections[0][1:]
	// Each section runs in a goroutine of its own rather than as a t.Parallel subtest: those run
	// at most -test.parallel (GOMAXPROCS, 2 here) at a time, and the tour's sections wait on
	// servers and runs, not the CPU: two at a time took 122 s of a make test's serial pass, all
	// at once 83 and 88 s on a busy machine, the Kubernetes block (80-90 s) being the longest.
	// t.Run may be called from several goroutines at once; every call returns before
	// "sections" does.
	t.Run("sections", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, sec := range sections {
			if len(sec) == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.Run(sec[0], func(t *testing.T) { tr.section().runLines(t, sec) })
			}()
		}
		wg.Wait()
	})
	t.Logf("the tour took %s", time.Since(start).Round(time.Second))
}

// runLines runs lines in order as subtests of t, stopping at the first failure: later lines
// build on earlier ones (the testbed, the cluster).
func (tr *tourRun) runLines(t *testing.T, lines []string) {
	for _, l := range lines {
		if t.Failed() {
			return
		}
		began := time.Now()
		t.Run(l, func(t *testing.T) {
			tr.t = t
			tourSteps[l](tr, l)
		})
		t.Logf("%6.1fs  %s", time.Since(began).Seconds(), l)
	}
}

// tourLines are the commands of the README's "A short tour" block: its first ```sh block, each
// line without its comment, blank and comment-only lines left out.
func tourLines(t *testing.T, readme string) []string {
	t.Helper()
	var lines []string
	for _, sec := range tourSections(t, readme) {
		lines = append(lines, sec...)
	}
	if len(lines) < 10 {
		t.Fatalf("%s: the tour has %d lines, want its whole block", readme, len(lines))
	}
	return lines
}

// tourSections are tourLines split where the block has a blank line.
func tourSections(t *testing.T, readme string) [][]string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## A short tour\n")
	if !ok {
		t.Fatalf("%s: no \"## A short tour\" section", readme)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: the tour has no ```sh block", readme)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s: the tour's block is not closed", readme)
	}
	sections := [][]string{nil}
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			if len(sections[len(sections)-1]) > 0 {
				sections = append(sections, nil)
			}
			continue
		}
		if l := strings.TrimSpace(stripComment(sc.Text())); l != "" {
			sections[len(sections)-1] = append(sections[len(sections)-1], l)
		}
	}
	if len(sections[len(sections)-1]) == 0 {
		sections = sections[:len(sections)-1]
	}
	return sections
}

// joinSections moves, for each pair, the later pair line's section behind the earlier pair
// line, which starts a section of its own: the lines before it in its section do not feed the
// later section and stay one of their own.
func joinSections(sections [][]string, together [][2]string) [][]string {
	find := func(line string) int {
		return slices.IndexFunc(sections, func(sec []string) bool { return slices.Contains(sec, line) })
	}
	for _, pair := range together {
		i, j := find(pair[0]), find(pair[1])
		if i < 0 || j < 0 || i == j {
			continue
		}
		first := pair[0]
		if i > j {
			i, j, first = j, i, pair[1]
		}
		k := slices.Index(sections[i], first)
		joined := append(slices.Clone(sections[i][k:]), sections[j]...)
		sections = slices.Delete(sections, j, j+1)
		if k == 0 {
			sections[i] = joined
		} else {
			sections[i] = sections[i][:k]
			sections = slices.Insert(sections, i+1, joined)
		}
	}
	return sections
}

// stripComment cuts a shell line at its comment: a # at the start or after a blank, outside quotes.
func stripComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

// tourRun is the state the tour's lines share: the clone they run in, the environment the
// export lines set, and what the quickstart wrote.
type tourRun struct {
	t       *testing.T
	root    string
	state   string   // CONTINUUM_STATE_DIR: this test's testbeds, not the user's
	env     []string // NAME=value from the tour's export lines
	scratch string   // where checked forms write instead of results/
	// quickstart is the results directory the quickstart line wrote, relative to the clone.
	quickstart string
	// ran are lines an earlier line's step ran beside it.
	ran []string
	// hostBefore is the host's namespaces, links and mounts before `cluster up`.
	hostBefore hostSets
}

// section is the state for one section of the tour: the clone, state and scratch directories
// are the tour's; what lines leave for later lines (exports, the quickstart's results, lines run
// beside others, the host before the cluster) is the section's own.
func (tr *tourRun) section() *tourRun {
	return &tourRun{root: tr.root, state: tr.state, scratch: tr.scratch}
}

func newTourRun(t *testing.T, root string) *tourRun {
	tr := &tourRun{t: t, root: root, state: t.TempDir(), scratch: t.TempDir()}
	// The tour writes where the README says: results/, images/, /tmp/a.kv, /tmp/c1, /tmp/p1 and
	// the gateway's secrets. What was not there before the test is removed after it (results/ is
	// the user's: only its new entries go; images/ holds only what `image build` makes again).
	for _, p := range []string{"results", "images", "/tmp/a.kv", "/tmp/c1", "/tmp/p1", "/var/lib/continuum/faas-gateway"} {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		if _, err := os.Stat(p); err == nil {
			if p == filepath.Join(root, "results") {
				before, _ := os.ReadDir(p)
				t.Cleanup(func() {
					now, _ := os.ReadDir(p)
					for _, e := range now {
						if !slices.ContainsFunc(before, func(b os.DirEntry) bool { return b.Name() == e.Name() }) {
							os.RemoveAll(filepath.Join(p, e.Name()))
						}
					}
				})
			}
			continue
		}
		t.Cleanup(func() { os.RemoveAll(p) })
	}
	t.Cleanup(func() {
		// A line that failed half way may leave a testbed or the cluster behind.
		out, err := tr.command(context.Background(), "bin/continuum testbed down --all").CombinedOutput()
		if err != nil {
			t.Errorf("cleanup: testbed down --all: %v\n%s", err, out)
		}
		if _, err := os.Stat(tourClusterDir); err == nil {
			out, err := tr.command(context.Background(), "bin/continuum cluster down").CombinedOutput()
			if err != nil {
				t.Errorf("cleanup: cluster down: %v\n%s", err, out)
			}
		}
	})
	return tr
}

// tourClusterDir is `continuum cluster`'s default --state-dir, which the tour's lines use.
const tourClusterDir = "/var/lib/continuum/cluster"

// command is line run by bash in the clone, in its own process group so that stopping it stops
// whatever it started.
func (tr *tourRun) command(ctx context.Context, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = tr.root
	cmd.Env = append(append(os.Environ(), "CONTINUUM_STATE_DIR="+tr.state), tr.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// must runs line to its end within timeout and fails the test unless it exits 0; it returns
// the output.
func (tr *tourRun) must(line string, timeout time.Duration) string {
	tr.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := tr.command(ctx, line).CombinedOutput()
	if ctx.Err() != nil {
		tr.t.Fatalf("%s: still running after %v\n%s", line, timeout, out)
	}
	if err != nil {
		tr.t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// asWritten runs the line as the README writes it.
func asWritten(tr *tourRun, line string) { tr.must(line, 10*time.Minute) }

// checked runs a scenario line as `run --check`: the scenario loads, every run's command lines
// build and the stacks it needs are there, without the minutes the runs take.
func checked(tr *tourRun, line string) {
	rest, ok := strings.CutPrefix(line, "bin/continuum run ")
	if !ok {
		tr.t.Fatalf("checked: %q is not a `bin/continuum run` line", line)
	}
	out := tr.must("bin/continuum run --check "+rest, time.Minute)
	if !strings.Contains(out, ": ok (") {
		tr.t.Fatalf("run --check did not say ok:\n%s", out)
	}
}

// outFlag is a bench's --out into results/, which a checked form points at the scratch
// directory so that a smoke run never replaces a real result of the user's.
var outFlag = regexp.MustCompile(`--out results/(\S+)`)

// quick runs a bench line with extra flags (its smoke form; none for a bench of seconds) and
// its output redirected.
func quick(extra ...string) tourStep {
	return func(tr *tourRun, line string) {
		m := outFlag.FindStringSubmatch(line)
		if m == nil {
			tr.t.Fatalf("quick: %q has no --out results/FILE", line)
		}
		l := outFlag.ReplaceAllString(line, "--out "+filepath.Join(tr.scratch, "$1"))
		l += " " + strings.Join(extra, " ")
		tr.must(l, 5*time.Minute)
		if b, err := os.ReadFile(filepath.Join(tr.scratch, m[1])); err != nil || len(b) == 0 {
			tr.t.Fatalf("%s wrote no report: %v", l, err)
		}
	}
}

// serve starts a server line, waits until url answers, and stops it.
func serve(url string) tourStep {
	return func(tr *tourRun, line string) { tr.startServer(line, url) }
}

// withServer runs the line while the server line (an earlier line of the tour that this one
// talks to) serves at url; the line's output must contain want.
func withServer(server, url, want string) tourStep {
	return func(tr *tourRun, line string) {
		tr.startServer(server, url)
		if out := tr.must(line, 2*time.Minute); !strings.Contains(out, want) {
			tr.t.Fatalf("%s: want %q in its output:\n%s", line, want, out)
		}
	}
}

// paceLoop runs the consumer line (without its &, for 8 s) and, while it runs, the producer
// line (for 5 s) on the kv line's server; both must end with "status":"ok": each saw the other's
// messages.
func paceLoop(tr *tourRun, line string) {
	tr.startServer(kvLine, kvURL)
	consumer := strings.TrimSpace(strings.TrimSuffix(line, "&")) + " --duration 8s"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := tr.command(ctx, consumer)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tr.t.Fatal(err)
	}
	produced := tr.must(paceProducer+" --duration 5s", 2*time.Minute)
	err := cmd.Wait()
	if err != nil {
		tr.t.Fatalf("%s: %v\n%s", consumer, err, out.String())
	}
	for _, o := range []string{out.String(), produced} {
		if !strings.Contains(o, `"status":"ok"`) {
			tr.t.Fatalf("a PACE side did not end ok:\n%s", o)
		}
	}
	tr.ran = append(tr.ran, paceProducer)
}

// compose runs the compose line's image build as written, then its run as `run --check`: the
// same file runs in full, and is checked (start order, healthchecks, the partition), in
// internal/app/kinds's TestComposeExample. The image build is the Kubernetes block's image build
// line to the byte, and the build is reproducible (the same tree gives the same tarballs), so
// that line is not run a second time: the cluster line after it takes these tarballs.
func compose(tr *tourRun, line string) {
	build, run, ok := strings.Cut(line, " && ")
	if !ok || build != imageBuild {
		tr.t.Fatalf("compose: %q is not `%s && <run line>`", line, imageBuild)
	}
	tr.must(build, 10*time.Minute)
	for _, n := range []string{"continuum", "proxy", "python"} {
		if _, err := os.Stat(filepath.Join(tr.root, "images", n+".tar")); err != nil {
			tr.t.Fatal(err)
		}
	}
	tr.ran = append(tr.ran, imageBuild)
	checked(tr, run)
}

// ranWith: the line ran in the step of an earlier line (which needs it running beside it).
func ranWith(earlier string) tourStep {
	return func(tr *tourRun, line string) {
		if !slices.Contains(tr.ran, line) {
			tr.t.Fatalf("%s should have run with %s", line, earlier)
		}
	}
}

// startServer starts line and waits until url answers an HTTP request (any status: a 401 from
// an endpoint behind auth is a server that serves); the server is stopped when the step ends.
func (tr *tourRun) startServer(line, url string) {
	t := tr.t
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	// Something answering before the server starts (another section's server on the same port,
	// a leftover) would pass for it below: say so instead.
	if resp, err := hc.Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("%s: %s already answers before the server starts (%s): another server holds its port", line, url, resp.Status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := tr.command(ctx, line)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cancel() // SIGKILL to the group
			<-exited
		}
		cancel()
	})
	var exitErr error
	testenv.Eventually(t, time.Minute, line+" answering "+url, func() bool {
		select {
		case exitErr = <-exited:
			t.Fatalf("%s exited before serving: %v\n%s", line, exitErr, out.String())
		default:
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
}

// testbedDown runs the down line and checks that the testbed left nothing on the host.
func testbedDown(name string, nodes ...string) tourStep {
	return func(tr *tourRun, line string) {
		tr.must(line, 2*time.Minute)
		c := &binRunner{t: tr.t, state: tr.state}
		c.assertNothingLeft(name, nodes)
	}
}

// runQuickstart runs the quickstart as written and keeps its results directory for the report line.
func runQuickstart(tr *tourRun, line string) {
	out := tr.must(line, 5*time.Minute)
	m := regexp.MustCompile(`(?m)^results:\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		tr.t.Fatalf("the quickstart printed no results directory:\n%s", out)
	}
	rel, err := filepath.Rel(tr.root, m[1])
	if err != nil || !strings.HasPrefix(rel, "results/quickstart-") {
		tr.t.Fatalf("the quickstart wrote %s, want results/quickstart-<timestamp> in the clone", m[1])
	}
	tr.quickstart = rel
}

// reportAgain re-renders the quickstart's results: the line's <timestamp> is the quickstart's.
func reportAgain(tr *tourRun, line string) {
	if tr.quickstart == "" {
		tr.t.Fatal("no quickstart results to report on")
	}
	dir := filepath.Join(tr.root, tr.quickstart)
	if err := os.Remove(filepath.Join(dir, "report.html")); err != nil {
		tr.t.Fatal(err)
	}
	tr.must(strings.Replace(line, "results/quickstart-<timestamp>", tr.quickstart, 1), 2*time.Minute)
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		tr.t.Fatalf("report did not write report.html again: %v", err)
	}
}

// export runs an `export NAME=VALUE` line and keeps NAME for the lines after it.
func export(tr *tourRun, line string) {
	assign, ok := strings.CutPrefix(line, "export ")
	name, _, ok2 := strings.Cut(assign, "=")
	if !ok || !ok2 {
		tr.t.Fatalf("export: %q is not `export NAME=VALUE`", line)
	}
	v := strings.TrimSpace(tr.must(line+` && printf '%s' "$`+name+`"`, time.Minute))
	if v == "" {
		tr.t.Fatalf("%s: %s is empty", line, name)
	}
	tr.env = append(tr.env, name+"="+v)
}

// hostSets is what a cluster adds to the host and `cluster down` must take away: network
// namespaces, links, mount points and processes working in the cluster's state directory.
type hostSets struct{ netns, links, mounts []string }

func snapshotHostSets(t *testing.T) hostSets {
	t.Helper()
	var s hostSets
	list := func(name string, args ...string) []string {
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		var v []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				v = append(v, f[0])
			}
		}
		return v
	}
	s.netns = list("ip", "netns", "list")
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		s.links = append(s.links, l.Name())
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			s.mounts = append(s.mounts, f[4])
		}
	}
	return s
}

// clusterUp starts the cluster as written, after noting the host as it was.
func clusterUp(tr *tourRun, line string) {
	if _, err := os.Stat(tourClusterDir); err == nil {
		tr.t.Fatalf("a cluster is already up in %s: the tour brings up its own (`bin/continuum cluster down` first)", tourClusterDir)
	}
	tr.hostBefore = snapshotHostSets(tr.t)
	tr.must(line, 5*time.Minute)
}

// clusterDown runs the down line and checks that the cluster gave the host back: no namespace,
// link or mount point that was not there before `cluster up` (testbeds' own, ctm-*, aside:
// other tests' testbeds come and go), no process left in its state directory.
func clusterDown(tr *tourRun, line string) {
	tr.must(line, 3*time.Minute)
	after := snapshotHostSets(tr.t)
	added := func(what string, before, now []string) {
		for _, v := range now {
			if !slices.Contains(before, v) && !strings.HasPrefix(v, "ctm") && !strings.HasPrefix(v, "/run/netns/ctm") {
				tr.t.Errorf("cluster down left the %s %s", what, v)
			}
		}
	}
	added("network namespace", tr.hostBefore.netns, after.netns)
	added("link", tr.hostBefore.links, after.links)
	added("mount point", tr.hostBefore.mounts, after.mounts)
	for _, p := range []string{tourClusterDir, tourClusterDir + ".daemon.log"} {
		if _, err := os.Stat(p); err == nil {
			tr.t.Errorf("cluster down left %s", p)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(tourClusterDir)) {
			tr.t.Errorf("cluster down left process %s: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
	if out, err := tr.command(context.Background(), "bin/continuum cluster status").CombinedOutput(); err == nil {
		tr.t.Errorf("cluster status after down: exit 0, want no cluster\n%s", out)
	}
}

// chartEndToEnd: `make test-kubernetes` is TestChartOnCluster, which `make test` runs in its
// clusters' host lane (HOST_TESTS) or serial pass; here the target is checked to be that test, not run a
// second time.
func chartEndToEnd(tr *tourRun, line string) {
	out := tr.must("make -n test-kubernetes", time.Minute)
	if !strings.Contains(out, "-run 'TestChartOnCluster'") || !strings.Contains(out, "./internal/kubernetes/cluster/") {
		tr.t.Fatalf("make test-kubernetes no longer runs TestChartOnCluster:\n%s", out)
	}
	mk, err := os.ReadFile(filepath.Join(tr.root, "Makefile"))
	if err != nil {
		tr.t.Fatal(err)
	}
	for _, list := range []string{"HOST_TESTS", "SERIAL_TESTS"} {
		m := regexp.MustCompile(`(?s)\n` + list + `\s*:=(.*?)\n\S`).FindSubmatch(mk)
		if m != nil && regexp.MustCompile(`\./internal/kubernetes/cluster(\s|$)`).Match(m[1]) {
			return
		}
	}
	tr.t.Fatalf("the Makefile's HOST_TESTS and SERIAL_TESTS lack ./internal/kubernetes/cluster, whose TestChartOnCluster `make test` runs")
}
