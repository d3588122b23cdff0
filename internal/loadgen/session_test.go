package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

func TestSessionRecordsOperationsItsCallerStarts(t *testing.T) {
	dir := t.TempDir()
	var prog bytes.Buffer
	s, err := NewSession(Config{Duration: time.Minute, OutDir: dir, Progress: &prog}, []string{"put", "notify"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		op, ok := s.Begin("put")
		if !ok {
			t.Fatal("Begin refused during the session")
		}
		op.End(nil)
	}
	op, _ := s.Begin("put")
	op.End(context.DeadlineExceeded)
	s.Observe("notify", 5*time.Millisecond, nil)
	if _, ok := s.BeginAt("notify", s.T0().Add(-time.Millisecond)); ok {
		t.Error("BeginAt accepted an operation due before the session")
	}
	op, ok := s.BeginAt("notify", s.T0()) // latency from the start; the median stays the two 5 ms
	if !ok {
		t.Fatal("BeginAt refused during the session")
	}
	op.End(nil)
	op, _ = s.Begin("notify")
	op.EndWith(5 * time.Millisecond)
	if _, ok := s.Begin("put"); !ok {
		t.Fatal("Begin refused during the session")
	} // never ended: counted as canceled by Close
	res, err := s.Close(true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Status != StatusInterrupted {
		t.Errorf("status %q, want interrupted (closed before its duration)", res.Stats.Status)
	}
	put, notify := res.Stats.Series["put"], res.Stats.Series["notify"]
	if put.Sent != 5 || put.OK != 3 || put.Errors != 2 || put.ErrorsByType[ErrTimeout] != 1 || put.ErrorsByType[ErrCanceled] != 1 {
		t.Errorf("put %+v", put)
	}
	if notify.OK != 3 || notify.Latency.P50 < 4.99 || notify.Latency.P50 > 5.01 {
		t.Errorf("notify %+v", notify)
	}
	if _, ok := s.Begin("put"); ok {
		t.Error("Begin accepted after Close")
	}
	for _, f := range []string{results.StatsFile, results.TimeseriesFile, results.LatencyLogFile, results.PercentilesFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(prog.String()), "\n")
	var last ProgressLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "done" || last.Series["put"].OK != 3 {
		t.Errorf("last progress line %q (%v)", lines[len(lines)-1], err)
	}
	if again, err := s.Close(false); again != res || err != nil {
		t.Error("second Close differs")
	}
}

func TestSessionRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		ops  []string
		want string
	}{
		{Config{}, []string{"a"}, "duration"},
		{Config{Duration: time.Second, Warmup: time.Second}, []string{"a"}, "warmup"},
		{Config{Duration: time.Second}, nil, "no operation types"},
		{Config{Duration: time.Second}, []string{"a b"}, "series name"},
		{Config{Duration: time.Second}, []string{"a", "a"}, "named twice"},
	} {
		if _, err := NewSession(c.cfg, c.ops); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: error %v, want %q", c.cfg, c.ops, err, c.want)
		}
	}
}
