package kinds

import (
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"github.com/continuum-project/continuum/internal/fl/orchestrator"
	"github.com/continuum-project/continuum/internal/fl/plan"
)

// Output is what an orchestrator left in its output directory, as the report reads it.
type Output struct {
	Rounds           []Round
	Configurations   []Configuration
	Reconfigurations []orchestrator.Reconfiguration
	NodeChanges      []NodeChange
	Stop             string
	T0               float64 // the first event's time (unix seconds)
}

// Round is a row of rounds.csv.
type Round struct {
	T, Accuracy, Loss, CostSpent float64
	Round, Config                int
	BytesSent, BytesReceived     int64
}

// Configuration is a configuration in force from T (the first, then one per reconfiguration).
type Configuration struct {
	T      float64
	Cause  string
	Config plan.Config
}

// NodeChange is a node leaving or joining, as the orchestrator saw it.
type NodeChange struct {
	T      float64
	Change string
}

// ReadOutput reads an orchestrator's fl-events.jsonl and rounds.csv in dir.
func ReadOutput(dir string) (*Output, error) {
	events, err := orchestrator.ReadEvents(dir)
	if err != nil {
		return nil, err
	}
	out := &Output{}
	for i, ev := range events {
		if i == 0 {
			out.T0 = ev.T
		}
		switch ev.Kind {
		case orchestrator.EventConfigure:
			if ev.Config != nil {
				out.Configurations = append(out.Configurations, Configuration{T: ev.T, Cause: "start", Config: *ev.Config})
			}
		case orchestrator.EventReconfigure:
			if ev.Config != nil && ev.Reconfiguration != nil {
				out.Configurations = append(out.Configurations, Configuration{T: ev.T, Cause: ev.Reconfiguration.Cause, Config: *ev.Config})
				out.Reconfigurations = append(out.Reconfigurations, *ev.Reconfiguration)
			}
		case orchestrator.EventResumed:
			// The reconfiguration it closes is the last one detected at that time.
			for k := len(out.Reconfigurations) - 1; k >= 0; k-- {
				if out.Reconfigurations[k].DetectedAt == ev.DetectedAt {
					out.Reconfigurations[k].ResumeS = ev.ResumeS
					out.Reconfigurations[k].ResumedAt = ev.DetectedAt + ev.ResumeS
					break
				}
			}
		case orchestrator.EventNodeChange:
			out.NodeChanges = append(out.NodeChanges, NodeChange{T: ev.T, Change: ev.Change})
		case orchestrator.EventStop:
			out.Stop = ev.Reason
		}
	}
	rows, err := readCSV(filepath.Join(dir, orchestrator.RoundsFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, r := range rows {
		if len(r) < len(orchestrator.RoundsHeader) || r[0] == "t" {
			continue
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(r[i], 64); return v }
		n := func(i int) int64 { v, _ := strconv.ParseInt(r[i], 10, 64); return v }
		out.Rounds = append(out.Rounds, Round{T: f(0), Round: int(n(1)), Accuracy: f(2), Loss: f(3), BytesSent: n(6),
			BytesReceived: n(7), CostSpent: f(8), Config: int(n(9))})
	}
	return out, nil
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	return r.ReadAll()
}
