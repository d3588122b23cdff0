package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// wsListen is one listen (q) of a connection: a hub subscription to a path, and for a query
// (which the SDK tags) the query. The hub's events become data pushes: a put at the listen's
// path plus the event's path ("d"), or a patch there ("m", whose keys are children). A tagged
// push is applied by the SDK to that query's view only, at the path it names.
//
// All the listens of a connection signal one channel (Hub.SubscribeNotify), which the
// connection's writing goroutine waits on beside its send queue: it takes what every listen has
// waiting and queues it, then writes. Taking and queueing are one step under the connection's
// fwdMu (takeAllLocked), so a listen's pushes keep their order, and a write that waited for its
// revision (settle) and then takes under the same lock queues its "ok" after its change.
type wsListen struct {
	c    *wsConn
	path []string
	tag  json.RawMessage // nil for the default query
	q    json.RawMessage // the query object the listen sent (with tag), named when it is revoked
	sub  *hub.Subscription

	stopped bool          // guarded by c.fwdMu: unlistened or revoked; nothing of it is queued after
	first   chan struct{} // closed once the first value (the subscription's first event) is queued
	queued  bool          // guarded by c.fwdMu: first is closed
	denied  bool          // guarded by c.fwdMu: revoked before its first value (revoke.go)
	held    []*hub.Event  // guarded by c.fwdMu: taken, not queued until the hub reaches heldRev
	heldRev int64         // guarded by c.fwdMu
}

// listenKey names a listen as the SDK does for unlisten: its path and its query's tag.
func listenKey(p string, tag json.RawMessage) string {
	path, _ := tree.ParsePath(p)
	return strings.Join(path, "/") + "\x00" + string(tag)
}

// listen subscribes on the hub and returns once the subscription's first event (the whole
// value) is queued: Firebase sends a listen's value before the listen's "ok".
func (c *wsConn) listen(ctx context.Context, req *wsRequest) (any, error) {
	path, err := c.path(req.B.P)
	if err != nil {
		return nil, err
	}
	var tag, rawq json.RawMessage
	var hq *hub.Query
	if len(req.B.T) > 0 && string(req.B.T) != "null" {
		tag, rawq = req.B.T, req.B.Q
		qu, err := wireQuery(req.B.Q)
		if err != nil {
			return nil, err
		}
		if qu != nil {
			hq = hub.QueryOf(qu)
		}
	}
	key := listenKey(req.B.P, tag)
	if old := c.listens[key]; old != nil {
		c.stopListen(old)
		delete(c.listens, key)
	}
	// Judged as the caller is now, after noting the connection's epoch: a change of the
	// caller or the rules that this judgement may have missed moves the epoch or closes
	// rulesCh, and joinLocked then has every listen judged again before any event flows.
	c.fwdMu.Lock()
	epoch := c.epoch
	c.fwdMu.Unlock()
	ctx = c.withAuth(ctx)
	if err := c.s.st.ReadAllowedLazy(ctx, c.ns, path); err != nil {
		return nil, err
	}
	sub, err := c.s.hub.SubscribeNotify(ctx, c.ns, path, hq, c.hubWake)
	if err != nil {
		return nil, err
	}
	l := &wsListen{c: c, path: path, tag: tag, q: rawq, sub: sub, first: make(chan struct{})}
	c.fwdMu.Lock()
	c.joinLocked(l, epoch)
	c.takeAllLocked() // a path already listened to has its first event queued at once
	c.fwdMu.Unlock()
	select {
	case <-l.first:
		c.fwdMu.Lock()
		denied := l.denied
		c.fwdMu.Unlock()
		if denied {
			l.sub.Close()
			return nil, auth.ErrPermissionDenied
		}
	case <-c.closing:
		c.stopListen(l)
		return nil, errors.New("connection closing")
	case <-ctx.Done():
		c.stopListen(l)
		return nil, ctx.Err()
	}
	c.listens[key] = l
	return map[string]any{}, nil
}

func (c *wsConn) unlisten(req *wsRequest) {
	var tag json.RawMessage
	if len(req.B.T) > 0 && string(req.B.T) != "null" {
		tag = req.B.T
	}
	key := listenKey(req.B.P, tag)
	if l := c.listens[key]; l != nil {
		c.stopListen(l)
		delete(c.listens, key)
	}
}

// stopListen ends l: nothing of it is queued after this returns.
func (c *wsConn) stopListen(l *wsListen) {
	c.fwdMu.Lock()
	l.stopped = true
	delete(c.fwd, l)
	c.fwdMu.Unlock()
	l.sub.Close()
}

// takeAllLocked queues what every listen of the connection has waiting, and forgets the
// listens whose subscription ended. The hub ending (the server closing) closes the connection:
// the SDK reconnects and listens again. While the listens await a judgement (heldLocked) it
// takes nothing: their events wait in the hub. The caller holds c.fwdMu.
func (c *wsConn) takeAllLocked() {
	// The hub's revision is read before the rules channel is looked at. The hub closes the
	// channel of a rules change under the same lock in which its revision becomes the
	// change's, so an open channel after the read means no change up to applied: events up to
	// it may go, later ones wait. Read the other way round, a change and an event after it
	// could both be dispatched between the two reads, and the event would be sent unjudged.
	applied := c.s.hub.AppliedRev()
	if c.heldLocked() {
		return
	}
	for l := range c.fwd {
		if l.held != nil {
			if l.heldRev > applied {
				continue // the guard is waiting for the hub to reach it
			}
			c.queueLocked(l, l.held)
			l.held = nil
		}
		evs, err := l.sub.TryNext()
		if rev := hub.MaxRev(evs); rev > applied {
			// A first value read at a revision the hub's watch has not reached: a rules change
			// up to it may not have closed rulesCh yet. Kept until the hub reaches it (the
			// guard waits, then takes again, or judges the listens when rulesCh closed).
			l.held, l.heldRev = evs, rev
			c.waitRev = max(c.waitRev, rev)
			c.signalGuard()
		} else {
			c.queueLocked(l, evs)
		}
		if err != nil {
			delete(c.fwd, l)
			if !errors.Is(err, hub.ErrSubscriptionClosed) {
				c.close()
			}
		}
	}
}

// queueLocked queues evs, l's events; the first one closes l.first. The caller holds c.fwdMu.
func (c *wsConn) queueLocked(l *wsListen, evs []*hub.Event) {
	for _, ev := range evs {
		c.sendBytes(l.message(ev))
	}
	if len(evs) > 0 && !l.queued {
		l.queued = true
		close(l.first)
	}
}

// settle returns once every event up to revision rev (a write's, or a read's) is in the send
// queue for each listen of the connection, so that what the caller queues next follows it.
// A connection without listens owes nobody an order and does not wait.
func (c *wsConn) settle(ctx context.Context, rev int64) error {
	if len(c.listens) == 0 {
		return nil
	}
	if err := c.s.hub.WaitApplied(ctx, rev); err != nil {
		return err
	}
	c.fwdMu.Lock()
	c.takeAllLocked()
	c.fwdMu.Unlock()
	return nil
}

// stopListens ends every listen of the connection.
func (c *wsConn) stopListens() {
	for key, l := range c.listens {
		c.stopListen(l)
		delete(c.listens, key)
	}
}

// message is ev as this listen's data push. Untagged listens of one path share the bytes (on
// every connection): the hub shares ev among them, and the push depends only on the path.
func (l *wsListen) message(ev *hub.Event) []byte {
	if l.tag != nil {
		return encodePush(l.path, ev, l.tag)
	}
	return ev.Shared(func(ev *hub.Event) []byte { return encodePush(l.path, ev, nil) })
}

// encodePush is {"t":"d","d":{"a":"d"|"m","b":{"p":<path>,"d":<data>[,"t":<tag>]}}}: a put of
// ev's data at base plus ev's path, or (a patch) a merge of its children there.
func encodePush(base []string, ev *hub.Event, tag json.RawMessage) []byte {
	p := strings.Join(base, "/")
	if rel := strings.TrimPrefix(ev.Path, "/"); rel != "" {
		if p != "" {
			p += "/"
		}
		p += rel
	}
	a := "d"
	if ev.Type == "patch" {
		a = "m"
	}
	pj, _ := json.Marshal(p)
	b := make([]byte, 0, len(ev.Data)+len(pj)+len(tag)+40)
	b = append(b, `{"t":"d","d":{"a":"`...)
	b = append(b, a...)
	b = append(b, `","b":{"p":`...)
	b = append(b, pj...)
	b = append(b, `,"d":`...)
	b = append(b, ev.Data...)
	if tag != nil {
		b = append(b, `,"t":`...)
		b = append(b, tag...)
	}
	return append(b, "}}}"...)
}

// wireQuery reads the SDK's query object (queryParamsGetQueryObject): i the index (".key",
// ".value", ".priority" or a child path; priority when absent), sp/ep the start and end
// values, l the limit and vf the side it counts from ("l" first, "r" last). It is turned into
// the REST parameters the REST queries parse, so both protocols select alike. The start and
// end names (sn, en) and exclusive bounds (startAfter, endBefore) are not supported: they are
// read as inclusive bounds on the value only.
func wireQuery(raw json.RawMessage) (*tree.Query, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var q map[string]json.RawMessage
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, invalid("query: want an object such as {\"i\":\".key\",\"l\":10,\"vf\":\"l\"}: %v", err)
	}
	if len(q) == 0 {
		return nil, nil
	}
	v := url.Values{}
	ob := `"$priority"`
	if i, ok := q["i"]; ok {
		var name string
		if err := json.Unmarshal(i, &name); err != nil {
			return nil, invalid("query index i: want a string: %v", err)
		}
		switch name {
		case ".key":
			ob = `"$key"`
		case ".value":
			ob = `"$value"`
		case ".priority":
		default:
			b, _ := json.Marshal(name)
			ob = string(b)
		}
	}
	v.Set("orderBy", ob)
	if sp, ok := q["sp"]; ok {
		v.Set("startAt", string(sp))
	}
	if ep, ok := q["ep"]; ok {
		v.Set("endAt", string(ep))
	}
	if l, ok := q["l"]; ok {
		n, err := strconv.Atoi(string(l))
		if err != nil {
			return nil, invalid("query limit l %s: want an integer", l)
		}
		var vf string
		json.Unmarshal(q["vf"], &vf)
		if vf == "r" {
			v.Set("limitToLast", strconv.Itoa(n))
		} else {
			v.Set("limitToFirst", strconv.Itoa(n))
		}
	}
	qu, err := tree.ParseQuery(v)
	if err != nil {
		return nil, invalid("query %s: %v", raw, err)
	}
	if qu == nil {
		return nil, fmt.Errorf("query %s: no orderBy", raw)
	}
	return qu, nil
}
