package rtdb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// wsListen is one listen (q) of a connection: a path, and for a query (which the SDK tags) the
// query. It sends the value once (before the listen's "ok", as Firebase does), then each
// revision's changes under the path.
//
// A plain listen sends the changes themselves: one leaf as a put ("d") at its path, several as
// one merge ("m") at the listen's path, whose keys are the leaves' relative paths. A query
// listen keeps the whole subtree (view) and sends the query's result at the path, tagged,
// whenever that result changed: the SDK replaces a tagged query's data with what it is sent.
type wsListen struct {
	c    *wsConn
	w    *wsWatcher
	path []string
	tag  json.RawMessage // nil for the default query
	qu   *query

	mu      sync.Mutex
	ready   bool       // guarded by mu: false until the first value was sent
	from    int64      // guarded by mu: the revision of the first value; older changes are in it
	pending []wsRevEvs // guarded by mu: changes that arrived before ready
	view    any        // guarded by mu: a query's whole subtree
	sent    []byte     // guarded by mu: the canonical JSON of the query result last sent
}

type wsRevEvs struct {
	rev int64
	chs []wsChange
}

func (l *wsListen) prefix() []string { return l.path }

func (l *wsListen) fail(error) { l.c.close() } // the SDK reconnects and listens again

func (l *wsListen) deliver(rev int64, chs []wsChange, memo map[string][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready {
		l.pending = append(l.pending, wsRevEvs{rev, chs})
		return
	}
	l.applyLocked(rev, chs, memo)
}

// listenKey names a listen as the SDK does for unlisten: its path and its query's tag.
func listenKey(p string, tag json.RawMessage) string {
	path, _ := ParsePath(p)
	return strings.Join(path, "/") + "\x00" + string(tag)
}

// listen subscribes before reading, so that no change after the read's revision is missed,
// then sends the value read and, after it, the changes newer than that read.
func (c *wsConn) listen(ctx context.Context, req *wsRequest) (any, error) {
	path, err := c.path(req.B.P)
	if err != nil {
		return nil, err
	}
	var tag json.RawMessage
	var qu *query
	if len(req.B.T) > 0 && string(req.B.T) != "null" {
		tag = req.B.T
		if qu, err = wireQuery(req.B.Q); err != nil {
			return nil, err
		}
	}
	key := listenKey(req.B.P, tag)
	if old := c.listens[key]; old != nil {
		old.w.unwatch(old)
		delete(c.listens, key)
	}
	w, err := c.s.ws.watchers.get(ctx, c.ns)
	if err != nil {
		return nil, err
	}
	l := &wsListen{c: c, w: w, path: path, tag: tag, qu: qu}
	if err := w.watch(l); err != nil {
		return nil, err
	}
	snap, err := c.s.st.read(ctx, c.ns, [][]string{path})
	if err == nil {
		err = c.s.st.readAllowed(ctx, c.ns, path, snap) // the rules, at the revision read
	}
	if err != nil {
		w.unwatch(l)
		return nil, err
	}
	c.listens[key] = l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from = snap.rev
	t := snap.trees[0]
	if qu != nil {
		l.view = t
		l.sendQueryLocked()
	} else {
		l.sendLocked(path, t, false)
	}
	for _, p := range l.pending {
		l.applyLocked(p.rev, p.chs, nil)
	}
	l.pending, l.ready = nil, true
	return map[string]any{}, nil
}

func (c *wsConn) unlisten(req *wsRequest) {
	var tag json.RawMessage
	if len(req.B.T) > 0 && string(req.B.T) != "null" {
		tag = req.B.T
	}
	key := listenKey(req.B.P, tag)
	if l := c.listens[key]; l != nil {
		l.w.unwatch(l)
		delete(c.listens, key)
	}
}

// sendLocked queues a put ("d") or merge ("m") at path.
func (l *wsListen) sendLocked(path []string, data any, merge bool) {
	l.c.sendBytes(l.encodeLocked(path, data, merge))
}

// encodeLocked is the message of a put ("d") or merge ("m") at path (data already output()
// for a merge).
func (l *wsListen) encodeLocked(path []string, data any, merge bool) []byte {
	b := map[string]any{"p": strings.Join(path, "/"), "d": data}
	if !merge {
		b["d"] = output(data)
	}
	if l.tag != nil {
		b["t"] = l.tag
	}
	a := "d"
	if merge {
		a = "m"
	}
	return encodeMsg(map[string]any{"t": "d", "d": map[string]any{"a": a, "b": b}})
}

func (l *wsListen) sendQueryLocked() {
	res := l.qu.apply(l.view)
	cj := canonical(res)
	if l.sent != nil && bytes.Equal(cj, l.sent) {
		return
	}
	l.sent = cj
	l.sendLocked(l.path, res, false)
}

// applyLocked sends one revision's changes (those newer than the first value). A plain
// listen's message depends only on its path and the changes, so one revision's message for a
// path is encoded once (memo, when given) and shared by its listens on every connection.
func (l *wsListen) applyLocked(rev int64, chs []wsChange, memo map[string][]byte) {
	if rev <= l.from {
		return
	}

	if l.qu != nil {
		// Deletions first: in one revision a leaf may be deleted and a child of it put
		// (a leaf replaced by an object), and the put must survive.
		for _, del := range []bool{true, false} {
			for _, ch := range chs {
				if (ch.val == nil) != del {
					continue
				}
				if len(ch.path) < len(l.path) { // an ancestor: a leaf there leaves nothing here
					if ch.val != nil {
						l.view = nil
					}
					continue
				}
				rel := ch.path[len(l.path):]
				if ch.val == nil {
					removeAt(&l.view, rel)
				} else {
					insert(&l.view, rel, ch.val.(leaf))
				}
			}
		}
		l.sendQueryLocked()
		return
	}
	key := strings.Join(l.path, "/")
	b, ok := memo[key]
	if !ok {
		b = l.encodeChanges(chs)
		if memo != nil {
			memo[key] = b
		}
	}
	l.c.sendBytes(b)
}

// encodeChanges is a plain listen's message for one revision's changes.
func (l *wsListen) encodeChanges(chs []wsChange) []byte {
	ents := mergeEntries(l.path, chs)
	if len(ents) == 1 {
		return l.encodeLocked(append(slices.Clip(l.path), ents[0].path...), ents[0].val, false)
	}
	m := make(map[string]any, len(ents))
	for _, e := range ents {
		m[strings.Join(e.path, "/")] = output(e.val)
	}
	return l.encodeLocked(l.path, m, true)
}

// mergeEntries turns one revision's leaf changes into non-overlapping (relative path, value)
// entries, so that the SDK applying them in any order ends with the stored tree:
//   - a change above the listen's path that puts a leaf makes the path null (a deletion there
//     only removed a leaf the path was already null under);
//   - a deleted leaf with a descendant put in the same revision was replaced by an object: the
//     put alone says so (the SDK turns a leaf into an object when a child is set);
//   - any entry under another entry is implied by it (a put leaf replaces its subtree, a
//     deletion clears it) and is dropped.
func mergeEntries(base []string, chs []wsChange) []wsChange {
	var ents []wsChange
	for _, ch := range chs {
		if len(ch.path) < len(base) {
			if ch.val != nil {
				ents = append(ents, wsChange{[]string{}, nil})
			}
			continue
		}
		ents = append(ents, wsChange{ch.path[len(base):], ch.val})
	}
	keep := ents[:0:0]
	for i, e := range ents {
		replaced := false
		if e.val == nil {
			for j, o := range ents {
				if j != i && o.val != nil && len(o.path) > len(e.path) && isPrefix(e.path, o.path) {
					replaced = true
					break
				}
			}
		}
		if !replaced {
			keep = append(keep, e)
		}
	}
	var out []wsChange
	for i, e := range keep {
		implied := false
		for j, o := range keep {
			if j != i && (len(o.path) < len(e.path) || (len(o.path) == len(e.path) && j < i)) && isPrefix(o.path, e.path) {
				implied = true
				break
			}
		}
		if !implied {
			out = append(out, e)
		}
	}
	return out
}

// removeAt deletes the node at rel from *root, pruning objects left empty.
func removeAt(root *any, rel []string) {
	if len(rel) == 0 {
		*root = nil
		return
	}
	m, ok := (*root).(map[string]any)
	if !ok {
		return
	}
	child, ok := m[rel[0]]
	if !ok {
		return
	}
	removeAt(&child, rel[1:])
	if child == nil {
		delete(m, rel[0])
	} else {
		m[rel[0]] = child
	}
	if len(m) == 0 {
		*root = nil
	}
}

// wireQuery reads the SDK's query object (queryParamsGetQueryObject): i the index (".key",
// ".value", ".priority" or a child path; priority when absent), sp/ep the start and end
// values, l the limit and vf the side it counts from ("l" first, "r" last). It is turned into
// the REST parameters the REST queries parse, so both protocols select alike. The start and
// end names (sn, en) and exclusive bounds (startAfter, endBefore) are not supported: they are
// read as inclusive bounds on the value only.
func wireQuery(raw json.RawMessage) (*query, error) {
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
	qu, err := parseQuery(v)
	if err != nil {
		return nil, invalid("query %s: %v", raw, err)
	}
	if qu == nil {
		return nil, fmt.Errorf("query %s: no orderBy", raw)
	}
	return qu, nil
}
