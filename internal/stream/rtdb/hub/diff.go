package hub

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// advance applies one revision's changes to t's cache and returns the event that brings its
// listeners from the old view to the new one (nil when nothing they see changed).
//
// Without a query the event is a put or a patch at C, the deepest node holding every changed
// leaf: a patch of C's changed children when C was and stays an object and at least two of its
// children changed (a multi-path PATCH, several records written at once), else a put of C's
// new value (one record written at /records/<id> reaches a listener on /records as a put at
// "/<id>"). With a query the result is re-evaluated on the cached subtree and the children that
// entered, left or changed in it are sent (a put of one, or a patch of several).
func (t *topic) advance(rev int64, cs []change) *Event {
	eff := cs[:0:0]
	for _, c := range cs {
		switch {
		case c.clear:
			if t.tree == nil {
				continue
			}
			c.rel = nil
		case c.del:
			if _, ok := tree.At(t.tree, c.rel).(tree.Leaf); !ok {
				continue
			}
		default:
			if l, ok := tree.At(t.tree, c.rel).(tree.Leaf); ok && l == c.val {
				continue
			}
		}
		eff = append(eff, c)
	}
	t.rev = rev
	if len(eff) == 0 {
		return nil
	}
	t.snap = nil
	if t.q != nil {
		return t.advanceQuery(rev, eff)
	}
	c := eff[0].rel
	for _, e := range eff[1:] {
		n := 0
		for n < len(c) && n < len(e.rel) && c[n] == e.rel[n] {
			n++
		}
		c = c[:n]
	}
	c = append([]string(nil), c...)
	_, oldMap := tree.At(t.tree, c).(map[string]any)
	// A node that appears or vanishes whole is sent whole: a one-field record written at
	// /records/a is a put of /a, not of /a/field. oldNil[i]: the node at c[:i] was absent.
	oldNil := make([]bool, len(c))
	for i := range c {
		oldNil[i] = tree.At(t.tree, c[:i]) == nil
	}
	whole := false
	kids := map[string]bool{}
	for _, e := range eff {
		t.tree = applyChange(t.tree, e)
		if len(e.rel) == len(c) {
			whole = true
		} else {
			kids[e.rel[len(c)]] = true
		}
	}
	t.view = t.tree
	// Not above the listener's children: a record written under an empty /records reaches
	// a listener there as a put of "/<id>", as Firebase sends it, not as a put of "/".
	k := len(c)
	for k > 1 && (oldNil[k-1] || tree.At(t.tree, c[:k-1]) == nil) {
		k--
	}
	if k < len(c) {
		c, whole = c[:k], true
	}
	nv := tree.At(t.tree, c)
	path := "/" + strings.Join(c, "/")
	if nm, newMap := nv.(map[string]any); !whole && oldMap && newMap && len(kids) >= 2 {
		ev := &Event{Type: "patch", Path: path, Data: encodeChildren(nm, kids), Rev: rev}
		if len(c) == 0 {
			ev.kids = make([]string, 0, len(kids))
			for k := range kids {
				ev.kids = append(ev.kids, k)
			}
		}
		return ev
	}
	return &Event{Type: "put", Path: path, Data: tree.Encode(nv, false), Rev: rev}
}

func (t *topic) advanceQuery(rev int64, eff []change) *Event {
	old := t.view
	whole := false
	top := map[string]bool{}
	for _, e := range eff {
		t.tree = applyChange(t.tree, e)
		if len(e.rel) == 0 {
			whole = true
		} else {
			top[e.rel[0]] = true
		}
	}
	t.view = t.q.Apply(t.tree)
	om, ok1 := old.(map[string]any)
	nm, ok2 := t.view.(map[string]any)
	if old == nil && t.view == nil {
		return nil
	}
	if whole || !ok1 || !ok2 {
		return &Event{Type: "put", Path: "/", Data: tree.Encode(t.view, false), Rev: rev}
	}
	changed := map[string]bool{}
	for k := range om {
		if _, ok := nm[k]; !ok {
			changed[k] = true
		}
	}
	for k := range nm {
		if _, ok := om[k]; !ok || top[k] {
			changed[k] = true
		}
	}
	switch len(changed) {
	case 0:
		return nil
	case 1:
		for k := range changed {
			return &Event{Type: "put", Path: "/" + k, Data: tree.Encode(nm[k], false), Rev: rev}
		}
	}
	return &Event{Type: "patch", Path: "/", Data: encodeChildren(nm, changed), Rev: rev}
}

// applyChange applies c to root in place (maps are the cache's own) and returns the new root.
func applyChange(root any, c change) any {
	switch {
	case c.clear:
		return nil
	case c.del:
		return removeLeaf(root, c.rel)
	}
	tree.Insert(&root, c.rel, c.val)
	return root
}

// removeLeaf deletes the leaf at rel and the objects it leaves empty.
func removeLeaf(t any, rel []string) any {
	if len(rel) == 0 {
		return nil
	}
	m, ok := t.(map[string]any)
	if !ok {
		return t
	}
	if k := removeLeaf(m[rel[0]], rel[1:]); k == nil {
		delete(m, rel[0])
	} else {
		m[rel[0]] = k
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// encodeChildren is a patch's data: an object (never an array) of the named children of m, null
// for those m no longer has.
func encodeChildren(m map[string]any, names map[string]bool) json.RawMessage {
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(b, kb...)
		b = append(b, ':')
		b = append(b, tree.Encode(m[k], false)...)
	}
	return append(b, '}')
}
