package benchkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testHeader(load0, load1 float64) Header {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return Header{Command: "continuum bench x --quick", Commit: "abc123", Machine: "Test CPU, 2 CPUs, kernel 6.1, go1.26",
		Host: &Machine{CPUModel: "Test CPU", Cores: 2, Kernel: "6.1", Go: "go1.26"}, Started: t0, Finished: t0.Add(90 * time.Second),
		LoadAvg: [2]float64{load0, load1}}
}

func TestDocHeader(t *testing.T) {
	for _, c := range []struct {
		name    string
		h       Header
		samples []float64
		want    []string
		absent  []string
	}{
		{"idle machine", testHeader(0.5, 1.2), nil,
			[]string{"# Title\n\n", "Regenerate with:\n\n```\ncontinuum bench x --quick\n```\n\n", "- Machine: Test CPU, 2 CPUs, kernel 6.1, go1.26\n",
				"- Commit: abc123\n", "- Date: 2026-03-01T12:00:00Z (90 s)\n", "- Host load average (1 min): 0.50 at the start, 1.20 at the end\n\n"},
			[]string{"Caution"}},
		{"busy at the end", testHeader(0.5, 2.6), nil, []string{"**Caution: the machine was busy.** The host's 1-minute load average reached 2.60 on 2 CPUs during this run (above 2.5)."}, nil},
		{"busy by a sample of the bench's own", testHeader(0.5, 1), []float64{3.1}, []string{"reached 3.10 on 2 CPUs"}, nil},
		{"busy in between", func() Header { h := testHeader(0.5, 1); h.Observe(4); return h }(), nil, []string{"reached 4.00 on 2 CPUs"}, nil},
		{"no commit, no load", Header{Command: "c", Machine: "m"}, nil, []string{"- Machine: m\n\n"}, []string{"Commit", "Date", "load average"}},
	} {
		md := NewDoc("Title", c.h, c.samples...).String()
		for _, w := range c.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: header lacks %q:\n%s", c.name, w, md)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(md, a) {
				t.Errorf("%s: header has %q:\n%s", c.name, a, md)
			}
		}
	}
}

func TestDocBlocks(t *testing.T) {
	d := NewDoc("T", Header{})
	d.Section("Sweep")
	tb := NewTable("lrc", "store", "ops/s", "sustained")
	tb.Row("kv", "5000", "yes")
	tb.Rowf("%s | %.0f | %s", "etcd", 1234.4, "no")
	tb.Row("redis")
	d.Table(tb)
	d.Goals("Against the goals", []Goal{Check("g1", true, "1 ms"), Skip("g2", "no data")})
	d.RawJSON(map[string]int{"n": 1})
	want := "# T\n\n## Sweep\n\n| store | ops/s | sustained |\n|---|---:|:---:|\n| kv | 5000 | yes |\n| etcd | 1234 | no |\n| redis | | |\n\n" +
		"## Against the goals\n\n- g1: 1 ms: **met**\n- g2: **not evaluated** (no data)\n\n" +
		"<details><summary>raw results (JSON)</summary>\n\n```json\n{\n  \"n\": 1\n}\n```\n</details>\n"
	if got := d.String(); got != want {
		t.Errorf("document:\n%s\nwant:\n%s", got, want)
	}
	if tb.Len() != 3 {
		t.Errorf("Len = %d", tb.Len())
	}
}

// result is a bench's result with the header embedded, as the benches write it.
type result struct {
	Header
	Figure float64 `json:"figure"`
	Goals  []Goal  `json:"goals"`
}

func TestWriteMarkdownAndJSON(t *testing.T) {
	dir := t.TempDir()
	res := result{Header: testHeader(0.1, 0.2), Figure: 1.5, Goals: []Goal{Check("g", true, "1")}}
	for _, c := range []struct {
		name     string
		path     string
		result   any
		stdout   string
		jsonFile string
	}{
		{"stdout", "", res, "# md\n", ""},
		{"markdown only", filepath.Join(dir, "a.md"), nil, "wrote " + filepath.Join(dir, "a.md") + "\n", ""},
		{"markdown and JSON", filepath.Join(dir, "b.md"), res, "wrote " + filepath.Join(dir, "b.md") + " and " + filepath.Join(dir, "b.json") + "\n", filepath.Join(dir, "b.json")},
		// --out results/x.md in a fresh clone: the directory does not exist yet.
		{"missing directory", filepath.Join(dir, "results", "c.md"), nil, "wrote " + filepath.Join(dir, "results", "c.md") + "\n", ""},
	} {
		var out strings.Builder
		if err := Write(&out, c.path, "# md\n", c.result); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if out.String() != c.stdout {
			t.Errorf("%s: printed %q, want %q", c.name, out.String(), c.stdout)
		}
		if c.path != "" {
			if b, err := os.ReadFile(c.path); err != nil || string(b) != "# md\n" {
				t.Errorf("%s: markdown %q, %v", c.name, b, err)
			}
		}
		if _, err := os.Stat(JSONPath(c.path)); c.path != "" && (err == nil) != (c.jsonFile != "") {
			t.Errorf("%s: JSON beside it: %v", c.name, err)
		}
		if c.jsonFile == "" {
			continue
		}
		// The header's fields sit at the top level, under the names results used before the kit.
		raw, _ := os.ReadFile(c.jsonFile)
		var top map[string]any
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"command", "commit", "machine", "host", "started", "finished", "loadavg_1m", "figure", "goals"} {
			if _, ok := top[k]; !ok {
				t.Errorf("%s: JSON lacks %q: %s", c.name, k, raw)
			}
		}
		var back result
		if err := ReadJSON(c.jsonFile, &back); err != nil || back.Figure != 1.5 || back.Commit != "abc123" || back.Host.Cores != 2 || back.Goals[0].Verdict != Met {
			t.Errorf("%s: read back %+v, %v", c.name, back, err)
		}
	}
	if got := JSONPath("docs/benchmarks/proxy.md"); got != "docs/benchmarks/proxy.json" {
		t.Errorf("JSONPath = %q", got)
	}
}

func TestStartAndFinish(t *testing.T) {
	h := Start("continuum bench x")
	h.Finish()
	if h.Command != "continuum bench x" || h.Host == nil || h.Host.Cores < 1 || h.Host.Go == "" || h.Machine != h.Host.String() ||
		h.Started.IsZero() || h.Finished.Before(h.Started) || h.Peak() < h.LoadAvg[0] {
		t.Errorf("header %+v", h)
	}
	if got := (Machine{Cores: 2, Kernel: "6.1", Go: "go1.26"}).String(); got != "unknown CPU, 2 CPUs, kernel 6.1, go1.26" {
		t.Errorf("Machine.String() = %q", got)
	}
}
