package streamload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/backoff"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

// sseSub listens to a realtime-db location with Firebase's REST streaming protocol: a GET with
// Accept: text/event-stream answers events
//
//	event: put|patch
//	data: {"path":"/rel/path","data":<JSON>}
//
// plus keep-alive (data null), cancel and auth_revoked. The first event of a connection is a
// put of the whole value at "/" (and a server may resync a listener that fell behind with
// another one). Records written at <path>/<id> arrive as put at "/<id>" or as
// a patch at "/" naming several ids. On any error it reconnects with a growing back-off; the
// first event of the new connection is the whole value again. Records in a put at "/" are not
// counted as duplicates.
type sseSub struct {
	url   string
	log   *slog.Logger
	recon atomic.Int64
	// resyncs counts puts at "/" after a connection's first event.
	resyncs atomic.Int64
	// client is the HTTP client (default: one without a timeout: the stream is long-lived).
	client *http.Client
}

func (s *sseSub) reconnects() int64 { return s.recon.Load() }

func (s *sseSub) resyncCount() int64 { return s.resyncs.Load() }

func (s *sseSub) run(ctx context.Context, ready chan<- struct{}, deliver func(string, []byte, bool)) {
	client := s.client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{DisableCompression: true}}
	}
	signalled := false
	markReady := func() {
		if !signalled {
			signalled = true
			close(ready)
		}
	}
	retry := backoff.Backoff{Min: 50 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			s.recon.Add(1)
			if !retry.Wait(ctx) {
				return
			}
		}
		got, err := s.stream(ctx, client, markReady, deliver)
		if got {
			retry.Reset()
		}
		if ctx.Err() == nil {
			s.log.Warn("realtime-db stream ended; reconnecting", "url", s.url, "err", err)
		}
	}
}

// stream runs one connection until it fails; got says whether any event arrived.
func (s *sseSub) stream(ctx context.Context, client *http.Client, markReady func(), deliver func(string, []byte, bool)) (got bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, fmt.Errorf("content type %q: the server does not stream (want text/event-stream)", ct)
	}
	first, seen := true, false
	err = readEvents(resp.Body, func(event string, data []byte) error {
		got = true
		switch event {
		case "put", "patch":
			var ev struct {
				Path string          `json:"path"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				return fmt.Errorf("%s event: %w", event, err)
			}
			// A put at "/" replaces the whole value: the first event of a connection, and, mid-
			// stream, a server's resync (a listener whose queue overflowed gets one full put
			// instead). Its records are not new deliveries, so they are not duplicates.
			// (A put at "/" also comes when the location goes from absent to present: the
			// first record under an empty path. Only one after records arrived is a resync.)
			snapshot := event == "put" && ev.Path == "/"
			if snapshot && !first && seen {
				s.resyncs.Add(1)
			}
			first = false
			seen = seen || !bytes.Equal(bytes.TrimSpace(ev.Data), []byte("null"))
			markReady() // before delivering: deliver waits for the users' session, which waits for this
			dispatchEvent(event, ev.Path, ev.Data, snapshot, deliver)
		case "keep-alive":
		case "cancel", "auth_revoked":
			return fmt.Errorf("server sent %s: %s", event, data)
		}
		return nil
	})
	return got, err
}

// dispatchEvent hands the records of one put or patch to deliver. A put or patch at "/" names
// ids as the keys of its data; a put at "/<id>" is one record; anything deeper is part of a
// record (reported as id "" with nil data: partial).
func dispatchEvent(event, path string, data json.RawMessage, snapshot bool, deliver func(string, []byte, bool)) {
	rel := strings.Trim(path, "/")
	switch {
	case rel == "":
		if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			return
		}
		var children map[string]json.RawMessage
		if json.Unmarshal(data, &children) != nil {
			deliver("", nil, false)
			return
		}
		for id, raw := range children {
			deliver(id, raw, snapshot)
		}
	case strings.Contains(rel, "/"):
		deliver("", nil, false)
	default:
		if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			return // a deletion
		}
		deliver(rel, data, false)
	}
}

// readEvents parses a text/event-stream with the realtime database's own client reader
// (rtdb.EventReader: "field: value" lines, an event ending at a blank line, several data lines
// joined by newlines, comments starting with ':') and calls fn per event until the stream ends
// (io.ErrUnexpectedEOF: a listener's stream never ends by itself) or fn fails.
func readEvents(r io.Reader, fn func(event string, data []byte) error) error {
	er := rtdb.NewEventReader(r)
	for {
		ev, err := er.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if err := fn(ev.Type, ev.Data); err != nil {
			return err
		}
	}
}
