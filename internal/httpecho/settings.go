package httpecho

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Settings are the run-time adjustable behaviour of the server.
type Settings struct {
	// Delay is waited (on a timer, not burning CPU) before answering.
	Delay time.Duration
	// CPUWork is CPU time burnt per request, measured on the serving thread's CPU clock so that
	// a CPU quota stretches the wall time instead of shortening the work.
	CPUWork time.Duration
	// ResponseSize, when > 0, is the exact response body size in bytes.
	ResponseSize int
}

// Limits on Settings: beyond them a request would outlive any sensible client timeout or the
// response would not fit comfortably in memory.
const (
	MaxDelay        = 10 * time.Minute
	MaxCPUWork      = time.Minute
	MaxResponseSize = 64 << 20
)

// Validate checks the limits; errors name the field as it is written in JSON and on the CLI.
func (s Settings) Validate() error {
	switch {
	case s.Delay < 0 || s.Delay > MaxDelay:
		return fmt.Errorf("delay %v: must be between 0s and %v", s.Delay, MaxDelay)
	case s.CPUWork < 0 || s.CPUWork > MaxCPUWork:
		return fmt.Errorf("cpu_work %v: must be between 0s and %v", s.CPUWork, MaxCPUWork)
	case s.ResponseSize < 0 || s.ResponseSize > MaxResponseSize:
		return fmt.Errorf("response_size %d: must be between 0 and %d bytes", s.ResponseSize, MaxResponseSize)
	}
	return nil
}

// settingsJSON is the wire form of Settings (GET/PUT /admin/config).
type settingsJSON struct {
	Delay        string `json:"delay"`
	CPUWork      string `json:"cpu_work"`
	ResponseSize int    `json:"response_size"`
}

// MarshalJSON writes durations in Go syntax ("20ms"), as PUT accepts them.
func (s Settings) MarshalJSON() ([]byte, error) {
	return json.Marshal(settingsJSON{Delay: s.Delay.String(), CPUWork: s.CPUWork.String(), ResponseSize: s.ResponseSize})
}

var adminFields = []string{"cpu_work", "delay", "response_size"}

// applyJSON returns cur changed by a PUT /admin/config body: a JSON object with any subset of
// delay, cpu_work (Go duration strings) and response_size (bytes). Unknown fields, wrong types
// and out-of-range values are errors naming the field; nothing is applied then.
func applyJSON(cur Settings, body []byte) (Settings, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return cur, fmt.Errorf(`body: want a JSON object such as {"delay":"20ms","cpu_work":"0s","response_size":0}`)
	}
	if dec.More() {
		return cur, fmt.Errorf("body: trailing data after the JSON object")
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic: the first bad field in name order is reported
	next := cur
	for _, k := range names {
		v := fields[k]
		var err error
		switch k {
		case "delay":
			next.Delay, err = decodeDuration(k, v)
		case "cpu_work":
			next.CPUWork, err = decodeDuration(k, v)
		case "response_size":
			next.ResponseSize, err = decodeSize(k, v)
		default:
			return cur, fmt.Errorf("unknown field %q (allowed: %s)", k, strings.Join(adminFields, ", "))
		}
		if err != nil {
			return cur, err
		}
	}
	if err := next.Validate(); err != nil {
		return cur, err
	}
	return next, nil
}

func decodeDuration(field string, v json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, fmt.Errorf("%s: want a duration string such as \"20ms\" or \"1.5s\", got %s", field, v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a duration such as \"20ms\" or \"1.5s\"", field, s)
	}
	return d, nil
}

func decodeSize(field string, v json.RawMessage) (int, error) {
	var n int64
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, fmt.Errorf("%s: want a whole number of bytes between 0 and %d, got %s", field, MaxResponseSize, v)
	}
	if n < 0 || n > MaxResponseSize {
		return 0, fmt.Errorf("%s %d: must be between 0 and %d bytes", field, n, MaxResponseSize)
	}
	return int(n), nil
}
