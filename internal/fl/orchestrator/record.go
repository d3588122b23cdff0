package orchestrator

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Output file names in the orchestrator's directory (read by the fl report section).
const (
	EventsFile = "fl-events.jsonl"
	RoundsFile = "rounds.csv"
)

// RoundsHeader is rounds.csv's header: one row per global round the global aggregator reported.
var RoundsHeader = []string{"t", "round", "accuracy", "loss", "clients", "failures", "bytes_sent", "bytes_received", "cost_spent", "config"}

// recorder appends to fl-events.jsonl and rounds.csv, flushing every line (a killed run keeps
// what it recorded).
type recorder struct {
	mu     sync.Mutex
	events *os.File
	rounds *os.File
	csv    *csv.Writer
}

func newRecorder(dir string) (*recorder, error) {
	ev, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	rpath := filepath.Join(dir, RoundsFile)
	fresh := true
	if fi, err := os.Stat(rpath); err == nil && fi.Size() > 0 {
		fresh = false
	}
	rf, err := os.OpenFile(rpath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		ev.Close()
		return nil, err
	}
	r := &recorder{events: ev, rounds: rf, csv: csv.NewWriter(rf)}
	if fresh {
		_ = r.csv.Write(RoundsHeader)
		r.csv.Flush()
	}
	return r, nil
}

// event appends e to fl-events.jsonl, at t.
func (r *recorder) event(t time.Time, e Event) {
	e.T = unix(t)
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.events.Write(append(b, '\n'))
}

func (r *recorder) round(rep Report, cost float64, config int) {
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', 6, 64)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.csv.Write([]string{strconv.FormatFloat(rep.T, 'f', 3, 64), strconv.Itoa(rep.Round), f(rep.Accuracy), f(rep.Loss),
		strconv.Itoa(rep.Clients), strconv.Itoa(rep.Failures), strconv.FormatInt(rep.BytesSent, 10),
		strconv.FormatInt(rep.BytesReceived, 10), strconv.FormatFloat(cost, 'f', 2, 64), strconv.Itoa(config)})
	r.csv.Flush()
}

func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.csv.Flush()
	err := r.rounds.Close()
	if e := r.events.Close(); err == nil {
		err = e
	}
	return err
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
