package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func refused(context.Context) error { return typedErr(ErrConnectionRefused) }

// A run whose every counted request failed, or that sent nothing, ends "failed" with an error
// that says why; one success anywhere counted is enough for "ok".
func TestNothingThrough(t *testing.T) {
	tests := []struct {
		name       string
		series     []Series
		count      []string
		wantStatus string
		wantErr    []string
	}{
		{"all failed", []Series{{"a", TargetFunc(refused)}}, nil, StatusFailed,
			[]string{"all 50 requests failed", ErrConnectionRefused + ": 50", "is the target up"}},
		{"one series ok", []Series{{"a", TargetFunc(refused)}, {"b", TargetFunc(ok)}}, nil, StatusOK, nil},
		{"ok series not counted", []Series{{"a", TargetFunc(refused)}, {"b", TargetFunc(ok)}}, []string{"a"}, StatusFailed,
			[]string{"all 50 requests failed"}},
		{"all ok", []Series{{"a", TargetFunc(ok)}}, nil, StatusOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Rate = 100
			cfg.Duration = 500 * time.Millisecond
			cfg.CountSeries = tt.count
			var prog bytes.Buffer
			cfg.Progress = &prog
			res, err := Run(context.Background(), cfg, tt.series)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.Status != tt.wantStatus {
				t.Fatalf("status %q, want %q", res.Stats.Status, tt.wantStatus)
			}
			lines := strings.Split(strings.TrimSpace(prog.String()), "\n")
			var done ProgressLine
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil || done.Status != tt.wantStatus {
				t.Errorf("done line %s: status %q (%v), want %q", lines[len(lines)-1], done.Status, err, tt.wantStatus)
			}
			ferr := res.Failure()
			if len(tt.wantErr) == 0 {
				if ferr != nil {
					t.Fatalf("Failure: %v", ferr)
				}
				return
			}
			var nt *NothingThroughError
			if !errors.As(ferr, &nt) || nt.ExitStatus() != ExitNothingThrough {
				t.Fatalf("Failure: %v, want a *NothingThroughError", ferr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(ferr.Error(), w) {
					t.Errorf("%q does not say %q", ferr, w)
				}
			}
		})
	}
}

// A session in which nothing was recorded sent nothing: failed, unless it was interrupted.
func TestSessionNothingSent(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		s, err := NewSession(Config{Duration: time.Minute}, []string{"put"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Close(interrupted)
		if err != nil {
			t.Fatal(err)
		}
		ferr := res.Failure()
		if interrupted && res.Stats.Status == StatusInterrupted && ferr == nil {
			continue
		}
		if interrupted {
			t.Fatalf("interrupted: status %q, Failure %v", res.Stats.Status, ferr)
		}
		if res.Stats.Status != StatusFailed || ferr == nil || !strings.Contains(ferr.Error(), "no requests were sent") {
			t.Fatalf("status %q, Failure %v; want failed, no requests were sent", res.Stats.Status, ferr)
		}
	}
}
