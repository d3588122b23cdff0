package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Paths of the control API (control.py's handler).
const (
	StatusPath = "/status"
	ConfigPath = "/config"
	StopPath   = "/stop"
)

// Settings is a POST /config body: what the aggregator applies from its next round (control.py's
// SETTINGS). The aggregator refuses values below 1 and names it does not know, so the body
// carries exactly these fields. LocalRounds is left out when 0: a global aggregator is sent its
// children's count and epochs only (local aggregators run their own local rounds).
type Settings struct {
	MinClients  int `json:"min_clients"`
	Epochs      int `json:"epochs"`
	LocalRounds int `json:"local_rounds,omitempty"`
}

// Status is what GET /status answers: the aggregator's identity, the round it is in, how many
// children are connected, and its settings now.
type Status struct {
	ID          string `json:"id"`
	Role        string `json:"role"` // global or local
	Round       int    `json:"round"`
	Clients     int    `json:"clients"`
	MinClients  int    `json:"min_clients"`
	Epochs      int    `json:"epochs"`
	LocalRounds int    `json:"local_rounds"`
}

// DefaultTimeout bounds one call: the API answers from memory, so a slow answer means a busy or
// unreachable node, and the orchestrator's loop must not hang on it.
const DefaultTimeout = 5 * time.Second

// maxAnswer bounds the answer read (a status is a hundred bytes).
const maxAnswer = 64 << 10

var defaultHTTP = &http.Client{Timeout: DefaultTimeout}

// Client calls one aggregator's control API.
type Client struct {
	ID    string // the aggregator's node, for errors
	Addr  string // host:port of its control API
	Token string // its control token (the orchestrator's ControlToken(ID))
	// HTTP is the client used; nil: one with DefaultTimeout.
	HTTP *http.Client
}

// Configure sends new settings (POST /config).
func (c Client) Configure(ctx context.Context, s Settings) error {
	return c.do(ctx, http.MethodPost, ConfigPath, s, nil)
}

// Stop asks the aggregator to finish its current round and exit 0 (POST /stop).
func (c Client) Stop(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, StopPath, struct{}{}, nil)
}

// Status asks for the aggregator's status (GET /status). The API is served only once the
// aggregator's Flower server listens, so an answer means it is ready for children.
func (c Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, StatusPath, nil, &st)
	return st, err
}

// URL is the address of one of the API's paths.
func (c Client) URL(path string) string { return "http://" + c.Addr + path }

func (c Client) do(ctx context.Context, method, path string, body, answer any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("aggregator %s %s: %w", c.ID, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL(path), rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("aggregator %s %s: %w", c.ID, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("aggregator %s %s: %s", c.ID, path, resp.Status)
	}
	if answer == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(answer); err != nil {
		return fmt.Errorf("aggregator %s %s: answer: %w", c.ID, path, err)
	}
	return nil
}
