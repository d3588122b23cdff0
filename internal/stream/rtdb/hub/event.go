package hub

import (
	"encoding/json"
	"net/url"
	"sync"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// Event is one notification to a listener, as Firebase expresses it: a "put" replaces the value
// at Path (relative to the listener's path, "/" for the listener's own node) by Data, a "patch"
// replaces each named child of the node at Path by its value in Data (null deletes it). Events
// are shared by every subscription of the same path and query: never modify one.
type Event struct {
	Type string          // "put" or "patch"
	Path string          // "/" or "/a/b", relative to the subscribed path
	Data json.RawMessage // JSON; for a patch an object of children
	Rev  int64           // the kv revision whose state the event brings the listener to

	// kids names the children a patch at "/" replaces (set by the hub): a slow listener's
	// overflowing queue folds events into the children they touched (subscription.go).
	kids []string

	sseOnce sync.Once
	sse     []byte
	// The WebSocket data push of an untagged listen (package ws), encoded once: an event is
	// shared only by the subscriptions of one topic, so every reader asks for the same path.
	sharedOnce sync.Once
	shared     []byte
}

// Shared is encode(e), computed once for every reader of e: what the WebSocket protocol sends
// an untagged listen, the same for every connection listening at that path.
func (e *Event) Shared(encode func(*Event) []byte) []byte {
	e.sharedOnce.Do(func() { e.shared = encode(e) })
	return e.shared
}

// SSE is the event as a text/event-stream frame, encoded once for all its listeners.
func (e *Event) SSE() []byte {
	e.sseOnce.Do(func() {
		b := make([]byte, 0, len(e.Data)+len(e.Path)+40)
		b = append(b, "event: "...)
		b = append(b, e.Type...)
		b = append(b, "\ndata: {\"path\":"...)
		p, _ := json.Marshal(e.Path)
		b = append(b, p...)
		b = append(b, ",\"data\":"...)
		b = append(b, e.Data...)
		b = append(b, "}\n\n"...)
		e.sse = b
	})
	return e.sse
}

// Query is a parsed listener query (orderBy with limits and bounds), as REST's parameters give it.
type Query struct {
	q   *tree.Query
	key string // identifies equal queries, so their listeners share one cache
}

// ParseQuery parses orderBy, limitToFirst, limitToLast, startAt, endAt and equalTo (JSON values,
// as in a REST URL); it returns nil, nil when there is no orderBy (the plain value is listened to).
func ParseQuery(v url.Values) (*Query, error) {
	q, err := tree.ParseQuery(v)
	if err != nil || q == nil {
		return nil, err
	}
	return QueryOf(q), nil
}

// QueryOf wraps a parsed query; equal queries, from REST or the WebSocket protocol, get equal
// keys and so share one topic.
func QueryOf(q *tree.Query) *Query { return &Query{q: q, key: q.Key()} }

// MaxRev is the latest revision of evs (0 for none).
func MaxRev(evs []*Event) int64 {
	var r int64
	for _, ev := range evs {
		r = max(r, ev.Rev)
	}
	return r
}
