package streamload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// verify reads the subscribed realtime-db location once and checks it holds every
// acknowledged record exactly as sent: the database-side half of exactly-once (a tree cannot
// hold an id twice, so duplicates show only as the listener's duplicate events).
func verify(ctx context.Context, client *http.Client, cfg Config, t *tally, run string) *Verify {
	v := &Verify{}
	p := cfg.Path
	if p == "/" {
		p = ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimSuffix(cfg.SubscribeURL, "/")+p+".json?ns="+url.QueryEscape(cfg.NS), nil)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	resp, err := client.Do(req)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		v.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		return v
	}
	var tree map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&tree); err != nil {
		v.Error = "decode: " + err.Error()
		return v
	}
	present := make([]bool, len(t.sentUS))
	for id, raw := range tree {
		v.Records++
		user, seq, ok := parseID(run, id)
		i, inRange := t.slot(user, seq)
		if !ok || !inRange || t.sentUS[i].Load() == 0 {
			v.Unexpected++
			continue
		}
		present[i] = true
		r, err := decodeRecord(raw)
		if err != nil || !checkRecord(r, run, user, seq, t.sentUS[i].Load(), cfg.Payload) {
			v.Mismatched++
		}
	}
	for i := range present {
		if t.acked[i].Load() && !present[i] {
			v.Missing++
		}
	}
	return v
}
