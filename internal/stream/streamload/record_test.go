package streamload

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
)

func TestRecordFormatAndSize(t *testing.T) {
	for _, size := range []int{MinPayload, 1024, 10240} {
		b, err := encodeRecord("r7", 12, 345, 1764000000123456, size)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != size {
			t.Errorf("payload %d: record is %d bytes", size, len(b))
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("payload %d: not JSON: %v", size, err)
		}
		if m["id"] != "r7-u12-345" || m["user"] != 12.0 || m["seq"] != 345.0 || m["sent_us"] != 1764000000123456.0 || len(m) != 5 {
			t.Errorf("payload %d: fields %v", size, m)
		}
		r, err := decodeRecord(b)
		if err != nil || !checkRecord(r, "r7", 12, 345, 1764000000123456, size) {
			t.Errorf("payload %d: its own record does not check: %v", size, err)
		}
		// Any change is caught: another sent_us, a pad byte, another size.
		if checkRecord(r, "r7", 12, 345, 1764000000123457, size) {
			t.Error("a different sent_us checks")
		}
		flip := "X"
		if r.Pad[0] == 'X' {
			flip = "Y"
		}
		r.Pad = flip + r.Pad[1:]
		if checkRecord(r, "r7", 12, 345, 1764000000123456, size) {
			t.Error("a changed pad checks")
		}
	}
	// Key order and spacing as a database returns them do not matter; extra fields do.
	raw := `{"pad":"%s", "sent_us": 5, "seq":0,"user":1,"id":"r1-u1-0"}`
	b, _ := encodeRecord("r1", 1, 0, 5, 200)
	var r record
	_ = json.Unmarshal(b, &r)
	got, err := decodeRecord([]byte(strings.Replace(raw, "%s", r.Pad, 1)))
	if err != nil || !checkRecord(got, "r1", 1, 0, 5, 200) {
		t.Errorf("reordered record: %v", err)
	}
	if _, err := decodeRecord([]byte(`{"id":"r1-u1-0","extra":1}`)); err == nil {
		t.Error("a record with an unknown field decodes")
	}
	if _, err := encodeRecord("r1", 1, 0, 5, 40); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("a payload too small: %v", err)
	}
}

func TestParseID(t *testing.T) {
	for _, c := range []struct {
		id        string
		user, seq int
		ok        bool
	}{{"r1-u0-0", 0, 0, true}, {"r1-u999-1000", 999, 1000, true}, {"r2-u1-1", 0, 0, false},
		{"r1-u1", 0, 0, false}, {"r1-ux-1", 0, 0, false}, {"r1-u1--1", 0, 0, false}, {"", 0, 0, false}} {
		u, s, ok := parseID("r1", c.id)
		if ok != c.ok || ok && (u != c.user || s != c.seq) {
			t.Errorf("parseID(%q) = %d, %d, %v", c.id, u, s, ok)
		}
	}
}

// TestAccounting: duplicates by id, a listener's snapshot not counted twice, content checked,
// foreign ids and partial events apart, lost = acknowledged and never received.
func TestAccounting(t *testing.T) {
	sess, err := loadgen.NewSession(loadgen.Config{Duration: time.Minute}, []string{SeriesE2E})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(false)
	tl := newTally(2, 3)
	now := time.Now().UnixMicro()
	body := map[int][]byte{}
	for u := 0; u < 2; u++ {
		for s := 0; s < 3; s++ {
			i, _ := tl.slot(u, s)
			tl.intendedUS[i].Store(now)
			tl.sentUS[i].Store(now + int64(i))
			tl.acked[i].Store(i != 5) // the last one's ack failed
			body[i], _ = encodeRecord("r1", u, s, now+int64(i), 300)
		}
	}
	d := func(id string, raw []byte, snap bool) { deliver(tl, sess, "r1", 300, id, raw, snap) }
	d("r1-u0-0", body[0], false)
	d("r1-u0-0", body[0], false) // duplicate
	d("r1-u0-1", body[1], true)  // in a snapshot
	d("r1-u0-1", body[1], true)  // a later snapshot (reconnect): not a duplicate
	d("r1-u0-2", body[0], false) // someone else's content
	d("r1-u1-2", body[5], false) // received though its ack failed
	d("r9-u0-0", body[0], false) // foreign
	d("r1-u7-0", body[0], false) // no such user
	d("", nil, false)            // part of a record
	c := tl.counts()
	want := counts{Sent: 6, Acked: 5, Received: 4, ReceivedUnacked: 1, Lost: 2}
	c.MaxLatencyMS = 0
	if c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
	if tl.duplicated.Load() != 1 || tl.mismatched.Load() != 1 || tl.foreign.Load() != 2 || tl.partial.Load() != 1 || tl.snapshot.Load() != 2 {
		t.Errorf("duplicated %d mismatched %d foreign %d partial %d snapshot %d", tl.duplicated.Load(), tl.mismatched.Load(),
			tl.foreign.Load(), tl.partial.Load(), tl.snapshot.Load())
	}
	if !tl.pending() {
		t.Error("acknowledged records not received are not pending")
	}
}

func TestConfigErrors(t *testing.T) {
	c := DefaultConfig()
	c.Send, c.Subscribe, c.Users, c.Payload, c.Path, c.Run = "mqtt", "poll", 0, 10, "records", "a/b"
	err := c.Validate()
	for _, want := range []string{`send "mqtt": must be rest`, `subscribe "poll": must be sse`, "users 0: must be between 1",
		"payload 10 bytes: must be between 160", `path "records": must start with /`, `run "a/b"`, "send url"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
