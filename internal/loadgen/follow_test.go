package loadgen

import (
	"strings"
	"testing"
)

func TestCountsText(t *testing.T) {
	for _, tc := range []struct {
		sent, failed int64
		want         string
	}{
		{1200, 0, "20 req/s  sent 1200, none failed"},
		{1200, 503, "20 req/s  sent 1200, 503 failed (41.9%)"},
		{0, 3, "20 req/s  sent 0, 3 failed (100.0%)"},
	} {
		if got := CountsText(20, tc.sent, tc.failed, "req"); got != tc.want {
			t.Errorf("CountsText(%d, %d) = %q, want %q", tc.sent, tc.failed, got, tc.want)
		}
	}
}

// TestFollowerSumsInstances: the latest line of each instance counts once (a later line
// replaces an earlier one), counters add up, latencies are the worst instance's, a done line
// counts, and other output is ignored.
func TestFollowerSumsInstances(t *testing.T) {
	f := Follow(func(t ProgressLine) string { return CountsText(t.ThroughputRPS, t.Sent, t.Errors, "req") })
	if got := f.Text(); got != "" {
		t.Fatalf("Text before any line = %q, want empty", got)
	}
	for _, l := range []struct{ inst, line string }{
		{"a", `{"type":"progress","t_s":1,"sent":10,"ok":10,"errors":0,"throughput_rps":10,"series":{"e2e":{"sent":10,"ok":10,"p99_ms":5}}}`},
		{"a", `{"type":"progress","t_s":2,"sent":20,"ok":19,"errors":1,"throughput_rps":9,"series":{"e2e":{"sent":20,"ok":19,"errors":1,"p99_ms":7}}}`},
		{"b", `not json`},
		{"b", `{"type":"other","sent":1000}`},
		{"b", `{"type":"done","t_s":2,"sent":30,"ok":30,"errors":0,"throughput_rps":15,"series":{"e2e":{"sent":30,"ok":30,"p99_ms":3}}}`},
	} {
		f.Line(l.inst, []byte(l.line))
	}
	total, ok := f.Total()
	if !ok {
		t.Fatal("Total: no line taken")
	}
	if total.Sent != 50 || total.Errors != 1 || total.ThroughputRPS != 24 {
		t.Errorf("Total = sent %d, errors %d, %g/s; want 50, 1, 24/s", total.Sent, total.Errors, total.ThroughputRPS)
	}
	if s := total.Series["e2e"]; s.OK != 49 || s.P99 != 7 {
		t.Errorf("series e2e = ok %d, p99 %g; want 49 and the worst instance's 7", s.OK, s.P99)
	}
	if got := f.Text(); !strings.HasPrefix(got, "24 req/s  sent 50, 1 failed") {
		t.Errorf("Text = %q", got)
	}
}
