package kinds

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testenv"
)

// processScenario puts Python's own web server (a program Continuum knows nothing about) on two
// nodes 10 ms and 60 ms from the device, each with a page of its own: the edge's written inline,
// the cloud's copied from a file beside the scenario. The edge is ready when its page answers
// 200, the cloud when its log says it serves; both stop on SIGINT. A third is ready when a
// command run on its node finds the file it writes. The cloud is cut off from 4 s to 8 s.
const processScenario = `version: 1
name: app-process-test
seed: 1
duration: 12s
topology:
  nodes: [{name: device}, {name: edge}, {name: cloud}]
  links:
    - {between: [device, edge], delay: 10ms}
    - {between: [edge, cloud], delay: 50ms}
components:
  - name: web-edge
    kind: app-process
    node: edge
    config:
      command: [python3, -m, http.server, "8080", --bind, 0.0.0.0, --directory, site]
      files: [{path: site/index.html, content: "edge page\n"}]
      memory: 128MiB
      endpoints: [{name: http, protocol: http, port: 8080}]
      ready: {http: {port: 8080, path: /index.html, status: 200}}
      stop_signal: SIGINT
      stop_grace: 10s
  - name: web-cloud
    kind: app-process
    node: cloud
    config:
      command: [python3, -u, -m, http.server, "8081", --directory, site]
      files: [{path: site/index.html, from: page.html}]
      cpus: 1
      endpoints: [{name: web, protocol: http, port: 8081}]
      ready: {log: 'Serving HTTP on .* port 8081'}
      stop_signal: INT
      stop_grace: 10s
  - name: web-image
    kind: app-container
    node: cloud
    config:
      image: images/checked
      command: [echo, --listen, ":9090"]
      memory: 256MiB
      volumes: ["out:/out", "home:/home/continuum:copy"]
      stop_grace: 10s
  - name: marker
    kind: app-process
    node: cloud
    config:
      command: [sh, -c, "sleep 0.5; echo ok > flag; exec sleep 600"]
      ready: {exec: [grep, -q, ok, flag]}
workloads:
  - name: load
    kind: http-load
    node: device
    config:
      rate: 20
      timeout: 2s
      targets:
        - {name: edge, component: web-edge}
        - {name: cloud, component: web-cloud}
        - {name: image, component: web-image}
events:
  - {at: 4s, action: partition, node: cloud}
  - {at: 8s, action: heal}
`

// TestProcessOnTestbed runs users' own programs and a container image as scenario components
// with `continuum run`: placed files, readiness by HTTP, by log line and by a command, limits, a
// workload driving them through their declared endpoints, a partition, and a graceful stop on
// their own signal; results as for our kinds. The image is the project's own (`continuum image
// build`) with an EXPOSE and a HEALTHCHECK added, its echo server run with runc in the cloud
// node: the workload finds it through the exposed port (no endpoints declared), its readiness
// is the image's health check run inside it, and a new volume over the image's home directory
// gets that directory's owner (Docker's copy-up).
func TestProcessOnTestbed(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root (network namespaces)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.SkipOrFail(t, "needs python3")
	}
	if testing.Short() {
		t.Skip("runs a 12 s experiment")
	}
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	dir, out, state := t.TempDir(), t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		if names, err := testbed.DestroyAll(state); err != nil || len(names) > 0 {
			t.Errorf("testbeds left after continuum run: %v (%v)", names, err)
		}
	})
	file := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(file, []byte(processScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte("cloud page\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		testenv.SkipOrFail(t, "needs runc (make setup)")
	}
	buildImage(t, bin, filepath.Join(dir, "images"))
	checkedImage(t, filepath.Join(dir, "images"))
	cmd := exec.Command(bin, "run", file, "--out", out, "--state-dir", state)
	cmd.Env = append(os.Environ(), "CONTINUUM_CACHE="+t.TempDir()) // the image's layers: not the machine's cache
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("continuum run: %v\n%s", err, b)
	}
	res, _ := filepath.Glob(filepath.Join(out, "app-process-test-*"))
	if len(res) != 1 {
		t.Fatalf("results in %s: %v", out, res)
	}
	run := results.RunDir(res[0], "001")

	// The files were placed in each instance's working directory (its output directory).
	for comp, want := range map[string]string{"web-edge": "edge page\n", "web-cloud": "cloud page\n"} {
		if b, err := os.ReadFile(filepath.Join(results.ComponentDir(run, comp), "site", "index.html")); string(b) != want {
			t.Errorf("%s's page: %q (%v), want %q", comp, b, err, want)
		}
	}

	// The workload reached both through their endpoints; only the cloud failed, and only around
	// the partition.
	var st struct {
		Series map[string]struct{ Sent, OK, Errors int } `json:"series"`
	}
	b, err := os.ReadFile(filepath.Join(results.WorkloadDir(run, "load"), "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	edge := st.Series["edge"]
	if edge.Sent == 0 || edge.Errors != 0 {
		t.Errorf("edge: %+v, want requests and no errors (no fault touched it)", edge)
	}
	for _, series := range []string{"cloud", "image"} {
		if s := st.Series[series]; s.Errors == 0 || s.OK == 0 {
			t.Errorf("%s: %+v, want errors during the partition and answers outside it", series, s)
		}
	}
	var okAfterHeal bool
	err = results.ReadCSV(filepath.Join(results.WorkloadDir(run, "load"), "timeseries.csv"), []string{"t_s", "series"}, func(r results.CSVRow) error {
		v, err := r.Floats("t_s", "ok", "errors")
		if err != nil {
			return err
		}
		series := r.Str("series")
		// Requests sent in [4 s, 8 s) time out 2 s later: errors belong to seconds 3..10.
		if series != "edge" && v[2] > 0 && (v[0] < 3 || v[0] > 10) {
			t.Errorf("%s errors at %gs, outside the partition (4-8 s, 2 s timeout)", series, v[0])
		}
		if series == "image" && v[0] >= 9 && v[1] > 0 {
			okAfterHeal = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !okAfterHeal {
		t.Error("the container answered nothing after the heal")
	}

	// Both servers stopped on SIGINT within their grace: Python's handler says so.
	for _, name := range []string{"edge.web-edge", "cloud.web-cloud"} {
		b, _ := os.ReadFile(filepath.Join(run, results.LogsDir, name+".stdout.log"))
		if !strings.Contains(string(b), "Keyboard interrupt received") {
			t.Errorf("%s stdout %q: want Python's SIGINT message (a graceful stop)", name, tail(b))
		}
	}

	// The container got SIGTERM through runc and drained (the echo server says so on stderr),
	// and its volume is in its output directory.
	b, _ = os.ReadFile(filepath.Join(run, results.LogsDir, "cloud.web-image.stderr.log"))
	if !strings.Contains(string(b), "echo server stopped") {
		t.Errorf("web-image stderr %s: want the echo server's graceful stop", tail(b))
	}
	if st, err := os.Stat(filepath.Join(results.ComponentDir(run, "web-image"), "out")); err != nil || !st.IsDir() {
		t.Errorf("web-image's volume out: %v", err)
	}
	// The new volume over /home/continuum took the image's directory's owner (the image's user).
	if st, err := os.Stat(filepath.Join(results.ComponentDir(run, "web-image"), "home")); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65532 {
		t.Errorf("web-image's volume home: %v (%v), want owned by 65532 as the image's /home/continuum", st, err)
	}
	// Its readiness was the image's HEALTHCHECK, run inside the container (container-exec).
	hp, _ := filepath.Glob(filepath.Join(run, results.LogsDir, "probes", "cloud.web-image.ready-*.log"))
	var printed []byte
	for _, p := range hp {
		b, _ := os.ReadFile(p)
		printed = append(printed, b...)
	}
	if !strings.Contains(string(printed), "continuum 0.") {
		t.Errorf("web-image's health checks (%d logs) printed %s, want continuum version's output", len(hp), tail(printed))
	}

	// The exec probe ran as instances of their own on the node, until one found the flag.
	probes, _ := filepath.Glob(filepath.Join(run, results.LogsDir, "probes", "cloud.marker.ready-*.stdout.log"))
	if len(probes) == 0 {
		t.Error("no exec probe ran for marker")
	}

	// Samples and the report cover them as any component.
	rows := map[string]int{}
	err = results.ReadCSV(filepath.Join(run, results.SamplesFile), []string{"node"}, func(r results.CSVRow) error {
		if v, err := r.Floats("rss_bytes"); err == nil && v[0] > 0 {
			rows[r.Str("component")]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows["web-edge"] < 5 || rows["web-cloud"] < 5 || rows["web-image"] < 5 {
		t.Errorf("sample rows with memory per instance: %v, want >= 5 each over 12 s", rows)
	}
	html, err := os.ReadFile(filepath.Join(res[0], "report.html"))
	if err != nil || !strings.Contains(string(html), "web-cloud") {
		t.Errorf("report.html (%v) does not name web-cloud", err)
	}
}

func tail(b []byte) string {
	if len(b) > 300 {
		b = b[len(b)-300:]
	}
	return strconv.Quote(string(b))
}

// staticBinary is a statically linked continuum (an image has no C library): bin when make
// built it ($CONTINUUM_BIN, CGO_ENABLED=0), else one built so.
func staticBinary(t *testing.T, bin string) string {
	t.Helper()
	if os.Getenv("CONTINUUM_BIN") != "" {
		return bin
	}
	static := filepath.Join(t.TempDir(), "continuum")
	cmd := exec.Command("go", "build", "-o", static, "github.com/continuum-project/continuum/cmd/continuum")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a static continuum: %v\n%s", err, out)
	}
	return static
}

// buildImage writes the project's own image (continuum image build) into dir/continuum.tar.
func buildImage(t *testing.T, bin, dir string) {
	t.Helper()
	if b, err := exec.Command(bin, "image", "build", "--images", "continuum", "--continuum-binary", staticBinary(t, bin),
		"--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("continuum image build: %v\n%s", err, b)
	}
}

// checkedImage writes dir/checked, an OCI layout of the project's image (dir/continuum.tar)
// with EXPOSE 9090/tcp and HEALTHCHECK CMD continuum version, as a Dockerfile FROM it would.
func checkedImage(t *testing.T, dir string) {
	t.Helper()
	img, err := oci.Load(filepath.Join(dir, "continuum.tar"), "continuum", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cf.Config
	cfg.ExposedPorts = map[string]struct{}{"9090/tcp": {}}
	cfg.Healthcheck = &v1.HealthConfig{Test: []string{"CMD", "continuum", "version"}, Interval: 500 * time.Millisecond, Retries: 5}
	if img, err = mutate.Config(img, cfg); err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(filepath.Join(dir, "checked"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
}
