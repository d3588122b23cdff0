package rules

import "strings"

// Data is the database as rules read it. Get returns the value at path (segments from the
// database's root): nil when absent, else bool, float64, string or map[string]any (never an
// empty map). The evaluator calls it only for the nodes an expression inspects and treats what it
// returns as read-only. An error fails the request (it is not a denial).
type Data interface {
	Get(path []string) (any, error)
}

// Update is one write: the value that replaces the node at Path (nil deletes it), in the same
// representation as Data's values.
type Update struct {
	Path  []string
	Value any
}

// view caches what Data returned during one check, so that data.child('a') after data.val() or
// the same rule at several nodes costs one read.
type view struct {
	data  Data
	cache map[string]any // joined path -> value
}

func newView(d Data) *view { return &view{data: d, cache: map[string]any{}} }

func (v *view) get(path []string) (any, error) {
	// The value of an ancestor read earlier holds the value here.
	for i := len(path); i >= 0; i-- {
		if val, ok := v.cache[strings.Join(path[:i], "/")]; ok {
			return lookup(val, path[i:]), nil
		}
	}
	val, err := v.data.Get(path)
	if err != nil {
		return nil, err
	}
	v.cache[strings.Join(path, "/")] = val
	return val, nil
}

// lookup is the value at rel under v.
func lookup(v any, rel []string) any {
	for _, k := range rel {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// overlay is the database after a set of non-overlapping updates.
type overlay struct {
	base *view
	ups  []Update
}

func (o overlay) Get(path []string) (any, error) {
	for _, u := range o.ups { // at or under a written path: the new value alone decides
		if hasPrefix(path, u.Path) {
			return lookup(u.Value, path[len(u.Path):]), nil
		}
	}
	base, err := o.base.get(path)
	if err != nil {
		return nil, err
	}
	for _, u := range o.ups { // above written paths: the old value with the new ones set in
		if hasPrefix(u.Path, path) {
			base = with(base, u.Path[len(path):], u.Value)
		}
	}
	return base, nil
}

// with returns v with the node at rel replaced by val, copying what it changes (v is shared),
// and dropping objects left empty as the database does.
func with(v any, rel []string, val any) any {
	if len(rel) == 0 {
		return val
	}
	m, _ := v.(map[string]any)
	c := make(map[string]any, len(m)+1)
	for k, e := range m {
		c[k] = e
	}
	if n := with(c[rel[0]], rel[1:], val); n == nil {
		delete(c, rel[0])
	} else {
		c[rel[0]] = n
	}
	if len(c) == 0 {
		return nil
	}
	return c
}

func hasPrefix(p, prefix []string) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}
