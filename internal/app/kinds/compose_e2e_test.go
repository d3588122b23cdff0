package kinds

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestComposeExample runs examples/compose/notes/compose.yaml with `continuum run`: three
// services from the project's image on two nodes, in depends_on order (web waits for db's
// healthcheck, which runs inside db's container), with their limits, a workload and a partition.
func TestComposeExample(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root (network namespaces, runc)")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		testenv.SkipOrFail(t, "needs runc (make setup)")
	}
	if testing.Short() {
		t.Skip("runs a 20 s experiment")
	}
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	images, out, state := t.TempDir(), t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		if names, err := testbed.DestroyAll(state); err != nil || len(names) > 0 {
			t.Errorf("testbeds left after continuum run: %v (%v)", names, err)
		}
	})
	buildImage(t, bin, images)
	file := "../../../examples/compose/notes/compose.yaml"
	cmd := exec.Command(bin, "run", file, "--out", out, "--state-dir", state)
	cmd.Env = append(os.Environ(), "CONTINUUM_IMAGES="+images, "CONTINUUM_CACHE="+t.TempDir()) // layers: not the machine's cache
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("continuum run %s: %v\n%s", file, err, b)
	}
	res, _ := filepath.Glob(filepath.Join(out, "notes-*"))
	if len(res) != 1 {
		t.Fatalf("results in %s: %v", out, res)
	}
	run := results.RunDir(res[0], "001")
	logs := filepath.Join(run, results.LogsDir)

	// db's healthcheck ran inside its container until it passed; web started after that (the
	// runner starts components one by one, in the order run.json lists them, checked below).
	probes, _ := filepath.Glob(filepath.Join(logs, "probes", "cloud.db.ready-*.stderr.log"))
	if len(probes) == 0 {
		t.Fatal("no healthcheck probe of db ran")
	}
	var lastProbe time.Time
	for _, p := range probes {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(lastProbe) {
			lastProbe = st.ModTime()
		}
	}
	webStart := firstLogTime(t, filepath.Join(logs, "cloud.web.stderr.log"))
	if webStart.Before(lastProbe) {
		t.Errorf("web started at %v, before db's last healthcheck at %v: depends_on service_healthy not honoured", webStart, lastProbe)
	}
	var rj struct {
		Instances []struct{ Name, Kind, Node string } `json:"instances"`
	}
	b, _ := os.ReadFile(filepath.Join(run, results.RunFile))
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, in := range rj.Instances {
		order = append(order, in.Name+"@"+in.Node)
	}
	if got := strings.Join(order, " "); got != "db@cloud web@cloud client@edge load@device" {
		t.Errorf("instances %q: want depends_on order and x-continuum's placement", got)
	}

	// The limits deploy.resources gives are the components' (the testbed applies them to their
	// cgroups: TestProcessMemoryLimitAndStopSignal), as the run recorded its scenario.
	b, _ = os.ReadFile(filepath.Join(res[0], "scenario.yaml"))
	if !regexp.MustCompile(`(?s)name: db\n.*?cpus: 0\.5\n\s+memory: 256Mi`).Match(b) ||
		!regexp.MustCompile(`(?s)name: web\n.*?memory: 128Mi`).Match(b) {
		t.Errorf("scenario.yaml lacks db's cpus 0.5 / memory 256Mi or web's memory 128Mi:\n%s", b)
	}

	// The workload reached web through the endpoint x-continuum declared; the partition cut it.
	var st struct {
		Series map[string]struct{ Sent, OK, Errors int } `json:"series"`
	}
	b, _ = os.ReadFile(filepath.Join(results.WorkloadDir(run, "load"), "stats.json"))
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if w := st.Series["web"]; w.OK == 0 || w.Errors == 0 {
		t.Errorf("web: %+v, want answers and errors during the partition", w)
	}
	// db, as the image's user, stored its data in its named volume (in its results), which
	// took the owner of the image's directory it is mounted over (Docker's copy-up).
	vol := filepath.Join(results.ComponentDir(run, "db"), "volumes", "dbdata")
	for _, p := range []string{vol, filepath.Join(vol, "db", "kv.lock")} {
		if st, err := os.Stat(p); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65532 {
			t.Errorf("db's named volume: %s: %v, want it owned by the image's user 65532", p, err)
		}
	}
}

var slogTime = regexp.MustCompile(`time=(\S+)`)

// firstLogTime is the time of the first slog line of a log.
func firstLogTime(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := slogTime.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no time= in %q", path, b)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
