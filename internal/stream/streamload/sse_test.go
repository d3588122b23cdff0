package streamload

import (
	"errors"
	"io"
	"sort"
	"strings"
	"testing"
)

// The parser of Firebase's event stream (the server is the realtime-db's; these cases pin the
// framing: CRLF, comments, multi-line data, events at the end of the stream).
func TestReadEvents(t *testing.T) {
	in := "event: put\r\ndata: {\"path\":\"/\",\"data\":null}\r\n\r\n" +
		": a comment\n" +
		"event: keep-alive\ndata: null\n\n" +
		"event: patch\ndata: {\"path\":\"/\",\n" + "data: \"data\":{\"a\":1}}\n\n" +
		"event: put\ndata: {\"path\":\"/x\",\"data\":2}\n"
	var got []string
	err := readEvents(strings.NewReader(in), func(ev string, data []byte) error {
		got = append(got, ev+" "+string(data))
		return nil
	})
	want := []string{`put {"path":"/","data":null}`, "keep-alive null", "patch {\"path\":\"/\",\n\"data\":{\"a\":1}}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a stream that ends mid-event: %v", err)
	}
}

func TestDispatchEvent(t *testing.T) {
	var got []string
	deliver := func(id string, raw []byte, snap bool) {
		s := id + "=" + string(raw)
		if snap {
			s += " (snapshot)"
		}
		got = append(got, s)
	}
	dispatchEvent("put", "/", []byte(`{"a":{"x":1},"b":{"x":2}}`), true, deliver)
	dispatchEvent("put", "/c", []byte(`{"x":3}`), false, deliver)
	dispatchEvent("patch", "/", []byte(`{"d":{"x":4}}`), false, deliver)
	dispatchEvent("put", "/e/x", []byte(`5`), false, deliver)
	dispatchEvent("put", "/f", []byte(`null`), false, deliver)
	dispatchEvent("put", "/", []byte(`null`), true, deliver)
	sort.Strings(got)
	want := []string{"=", `a={"x":1} (snapshot)`, `b={"x":2} (snapshot)`, `c={"x":3}`, `d={"x":4}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("delivered %q, want %q", got, want)
	}
}

func FuzzReadEvents(f *testing.F) {
	f.Add("event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n")
	f.Add("data: x\r\ndata: y\r\n\r\n:c\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = readEvents(strings.NewReader(s), func(ev string, data []byte) error {
			dispatchEvent(ev, "/"+ev, data, false, func(string, []byte, bool) {})
			return nil
		})
	})
}
