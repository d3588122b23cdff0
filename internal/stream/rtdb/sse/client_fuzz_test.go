package sse

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
)

// FuzzEventReader: any stream parses without panicking, and an event the server encodes reads
// back as the same type and data.
func FuzzEventReader(f *testing.F) {
	f.Add([]byte("event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n"), "/a", []byte(`{"x":1}`))
	f.Add([]byte(": comment\r\nevent: keep-alive\r\ndata: null\r\n\r\ndata: a\ndata: b\n\n"), "/", []byte(`"s"`))
	f.Fuzz(func(t *testing.T, raw []byte, path string, data []byte) {
		rd := NewEventReader(bytes.NewReader(raw))
		for i := 0; i < 1000; i++ {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
		if !json.Valid(data) || bytes.ContainsAny(data, "\r\n") {
			return
		}
		ev := &hub.Event{Type: "patch", Path: path, Data: data}
		got, err := NewEventReader(bytes.NewReader(ev.SSE())).Next()
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		var m struct {
			Path string
			Data json.RawMessage
		}
		if err := json.Unmarshal(got.Data, &m); err != nil {
			t.Fatalf("%q: %v", got.Data, err)
		}
		if got.Type != "patch" || !bytes.Equal(bytes.TrimSpace(m.Data), bytes.TrimSpace(data)) {
			t.Fatalf("round trip: %q %q, want patch %q", got.Type, m.Data, data)
		}
	})
}
