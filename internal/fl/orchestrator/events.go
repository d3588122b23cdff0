package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// EventKind names a line of fl-events.jsonl (its "event" field).
type EventKind string

// The orchestrator's events: its decisions and what it saw, in the order a job meets them.
const (
	EventConfigure         EventKind = "configure"          // the first configuration: Config, Available
	EventNodeChange        EventKind = "node-change"        // a node left or joined: Change
	EventReconfigure       EventKind = "reconfigure"        // a new configuration in place: Config, Replan, Reconfiguration
	EventReconfigureFailed EventKind = "reconfigure-failed" // no configuration fits the nodes left: Error, Cause
	EventResumed           EventKind = "resumed"            // the first global round after a reconfiguration: Round, ResumeS, DetectedAt
	EventServiceExited     EventKind = "service-exited"     // a service process ended: Service, Node, How
	EventServiceRestarted  EventKind = "service-restarted"  // the global aggregator started again: Service, Resume, RestartS
	EventStop              EventKind = "stop"               // the job ended: Reason, Round, Accuracy, CostSpent
	EventFailed            EventKind = "failed"             // the job failed: Error
)

// EventKinds lists every kind, in the order above.
var EventKinds = []EventKind{EventConfigure, EventNodeChange, EventReconfigure, EventReconfigureFailed, EventResumed,
	EventServiceExited, EventServiceRestarted, EventStop, EventFailed}

// Event is one line of fl-events.jsonl: the job loop writes it (recorder.event) and the fl report
// reads it back (ReadEvents), so a field is named once. Kind says which fields are set (see the
// kinds above); the others are left out of the line.
type Event struct {
	T    float64   `json:"t"` // unix seconds
	Kind EventKind `json:"event"`

	// Config is the configuration now in force (configure, reconfigure).
	Config *plan.Config `json:"config,omitempty"`
	// Available are the nodes the first configuration was planned on (configure).
	Available []string `json:"available,omitempty"`
	// Change is a node change in words: "n9 left (unreachable)", "n4 joined" (node-change).
	Change string `json:"change,omitempty"`
	// Replan is plan.Replan's decision (reconfigure). Lines written before it had a name of its
	// own carried it as "change"; ReadEvents reads them without it.
	Replan *plan.Change `json:"replan,omitempty"`
	// Reconfiguration is the change handled with its timings (reconfigure).
	Reconfiguration *Reconfiguration `json:"reconfiguration,omitempty"`
	// Cause are the node changes no configuration could follow (reconfigure-failed).
	Cause []string `json:"cause,omitempty"`
	// Error says what failed (failed, reconfigure-failed).
	Error string `json:"error,omitempty"`

	// Round is the global round (resumed: the first after the reconfiguration; stop: the last).
	Round int `json:"round,omitempty"`
	// ResumeS is how long after DetectedAt the global model completed a round again (resumed).
	ResumeS float64 `json:"resume_s,omitempty"`
	// DetectedAt is when the reconfiguration that resumed was detected (resumed): unix seconds.
	DetectedAt float64 `json:"detected_at,omitempty"`

	// Reason is why the job ended (stop).
	Reason    string   `json:"reason,omitempty"`
	Accuracy  *float64 `json:"accuracy,omitempty"`   // the last global round's (stop)
	CostSpent float64  `json:"cost_spent,omitempty"` // communication cost spent (stop)

	// Service, Node, How: a service process, its node, and how it ended ("exit 0", "signal
	// killed") (service-exited; service-restarted names the service only).
	Service string `json:"service,omitempty"`
	Node    string `json:"node,omitempty"`
	How     string `json:"how,omitempty"`
	// Resume: the service started from the model repository's latest snapshot, RestartS after
	// its exit was seen (service-restarted).
	Resume   bool    `json:"resume,omitempty"`
	RestartS float64 `json:"restart_s,omitempty"`
}

// ReadEvents reads the fl-events.jsonl in dir, in order. A line that is not an event (cut short by
// a kill) is skipped.
func ReadEvents(dir string) ([]Event, error) {
	b, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil && !oldReplan(e, err) {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// oldReplan: a reconfigure line of an older orchestrator, whose plan decision sat under "change"
// (an object where Change is text). json.Unmarshal fills every other field and reports only that
// one, so the line is kept without its decision, which no reader uses.
func oldReplan(e Event, err error) bool {
	var te *json.UnmarshalTypeError
	return e.Kind == EventReconfigure && errors.As(err, &te) && te.Field == "change"
}
