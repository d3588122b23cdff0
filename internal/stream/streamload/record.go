package streamload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// A record is the JSON object the experiments send (the format agreed with the bridge and the
// aggregator):
//
//	{"id":"<run>-u<user>-<seq>","user":u,"seq":n,"sent_us":<unix µs at send>,"pad":"<filler>"}
//
// Its encoding is exactly Payload bytes long: the pad fills what the other fields leave. The
// pad is a pure function of the id, so a subscriber can check a received record's content
// without the sender keeping its bytes: it rebuilds the record from the id and the sent_us it
// was told, and compares.
type record struct {
	ID     string `json:"id"`
	User   int    `json:"user"`
	Seq    int    `json:"seq"`
	SentUS int64  `json:"sent_us"`
	Pad    string `json:"pad"`
}

// MinPayload is the smallest payload a record fits in with a short pad: the fixed fields with
// large numbers, so no record of a valid run overflows it.
const MinPayload = 160

// recordID names record seq of user in run.
func recordID(run string, user, seq int) string {
	return run + "-u" + strconv.Itoa(user) + "-" + strconv.Itoa(seq)
}

// parseID splits an id made by recordID of this run.
func parseID(run, id string) (user, seq int, ok bool) {
	rest, found := strings.CutPrefix(id, run+"-u")
	if !found {
		return 0, 0, false
	}
	u, s, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	user, err1 := strconv.Atoi(u)
	seq, err2 := strconv.Atoi(s)
	if err1 != nil || err2 != nil || user < 0 || seq < 0 {
		return 0, 0, false
	}
	return user, seq, true
}

const padAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// fillPad writes n filler characters determined by id into buf (xorshift from the id's FNV
// hash: cheap, and different records carry different bytes, so nothing on the path can
// compress them to nothing or mistake one for another).
func fillPad(buf *bytes.Buffer, id string, n int) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	x := h.Sum64() | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf.WriteByte(padAlphabet[x%uint64(len(padAlphabet))])
	}
}

// encodeRecord renders the record of (run, user, seq) sent at sentUS, payload bytes long.
func encodeRecord(run string, user, seq int, sentUS int64, payload int) ([]byte, error) {
	id := recordID(run, user, seq)
	var b bytes.Buffer
	b.Grow(payload)
	b.WriteString(`{"id":"`)
	b.WriteString(id)
	b.WriteString(`","user":`)
	b.WriteString(strconv.Itoa(user))
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.Itoa(seq))
	b.WriteString(`,"sent_us":`)
	b.WriteString(strconv.FormatInt(sentUS, 10))
	b.WriteString(`,"pad":"`)
	n := payload - b.Len() - len(`"}`)
	if n < 0 {
		return nil, fmt.Errorf("payload %d bytes: too small for record %s (at least %d)", payload, id, b.Len()+2)
	}
	fillPad(&b, id, n)
	b.WriteString(`"}`)
	return b.Bytes(), nil
}

// errContent is a received record whose content differs from what was sent.
var errContent = errors.New("content differs from what was sent")

// decodeRecord parses a received record (raw JSON: a Kafka value, or the data of a realtime-db
// event, whose key order and number formatting may differ from ours).
func decodeRecord(raw []byte) (record, error) {
	var r record
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: %v", errContent, err)
	}
	return r, nil
}

// checkRecord reports whether r is exactly the record (run, user, seq) sent at sentUS with
// this payload size: every field, the pad included, rebuilt and compared.
func checkRecord(r record, run string, user, seq int, sentUS int64, payload int) bool {
	want, err := encodeRecord(run, user, seq, sentUS, payload)
	if err != nil {
		return false
	}
	got, err := json.Marshal(r)
	if err != nil {
		return false
	}
	// json.Marshal of a record writes the fields in declaration order with no spaces: the
	// same form encodeRecord writes (ids, pads and numbers need no escaping).
	return bytes.Equal(got, want)
}
