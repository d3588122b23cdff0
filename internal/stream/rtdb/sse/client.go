package sse

import (
	"bufio"
	"bytes"
	"io"
)

// StreamEvent is one event read from a text/event-stream: its type ("put", "patch",
// "keep-alive", "cancel", "auth_revoked") and data (for put and patch, {"path":..,"data":..}).
type StreamEvent struct {
	Type string
	Data []byte
}

// EventReader reads the events of a text/event-stream (a listener's response body): the client
// side of serveSSE, for tests, benchmarks and subscribers written in Go.
type EventReader struct {
	br *bufio.Reader
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next event; io.EOF (or the connection's error) when the stream ends.
func (er *EventReader) Next() (StreamEvent, error) {
	var ev StreamEvent
	var data [][]byte
	seen := false
	for {
		line, err := er.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer: gather it
			full := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = er.br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil {
			return StreamEvent{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if !seen {
				continue
			}
			if ev.Type == "" {
				ev.Type = "message"
			}
			ev.Data = bytes.Join(data, []byte{'\n'})
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		seen = true
		switch string(field) {
		case "event":
			ev.Type = string(value)
		case "data":
			data = append(data, append([]byte(nil), value...))
		}
	}
}
