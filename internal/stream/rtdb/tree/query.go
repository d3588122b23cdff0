package tree

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
)

// Query is a REST query: orderBy with limitToFirst/limitToLast and startAt/endAt/equalTo,
// applied to the children of the node read.
type Query struct {
	orderBy       string // "$key", "$value", "$priority" (as $key: no priorities) or a child path
	childPath     []string
	start, end    any // normalized bounds (leaf or nil), present flags below
	hasStart      bool
	hasEnd        bool
	first, last   int
	limitF, limit bool
}

// ParseQuery reads the query parameters; nil when there is no orderBy.
func ParseQuery(q url.Values) (*Query, error) {
	ob := q.Get("orderBy")
	others := false
	for _, p := range []string{"limitToFirst", "limitToLast", "startAt", "endAt", "equalTo"} {
		others = others || q.Has(p)
	}
	if ob == "" {
		if others {
			return nil, errors.New("orderBy must be defined when other query parameters are defined")
		}
		return nil, nil
	}
	var name string
	if err := json.Unmarshal([]byte(ob), &name); err != nil {
		return nil, errors.New(`orderBy must be a valid JSON encoded path, e.g. orderBy="$key"`)
	}
	qu := &Query{orderBy: name}
	switch name {
	case "$key", "$value", "$priority":
	default:
		p, err := ParsePath(name)
		if err != nil || len(p) == 0 {
			return nil, errors.New("orderBy must be $key, $value, $priority or a valid child path")
		}
		qu.childPath = p
	}
	for _, lp := range []struct {
		name string
		n    *int
		set  *bool
	}{{"limitToFirst", &qu.first, &qu.limitF}, {"limitToLast", &qu.last, &qu.limit}} {
		if !q.Has(lp.name) {
			continue
		}
		n, err := strconv.Atoi(q.Get(lp.name))
		if err != nil || n < 0 {
			return nil, errors.New(lp.name + " must be a non-negative integer")
		}
		*lp.n, *lp.set = n, true
	}
	if qu.limitF && qu.limit {
		return nil, errors.New("limitToFirst and limitToLast cannot both be defined")
	}
	bound := func(p string) (any, error) {
		v, err := ParseJSON([]byte(q.Get(p)))
		if err != nil {
			return nil, errors.New(p + " must be a JSON value: a string, number, boolean or null")
		}
		switch v.(type) {
		case map[string]any, []any:
			return nil, errors.New(p + " must be a JSON value: a string, number, boolean or null")
		}
		if s, ok := v.(string); (name == "$key" || name == "$priority") && !ok {
			return nil, errors.New(p + ": with orderBy=\"$key\" the bound must be a string")
		} else if ok && (name == "$key" || name == "$priority") {
			return Leaf(strconv.Quote(s)), nil
		}
		return Normalize(v, 0)
	}
	var err error
	if q.Has("equalTo") {
		if q.Has("startAt") || q.Has("endAt") {
			return nil, errors.New("equalTo cannot be defined with startAt or endAt")
		}
		if qu.start, err = bound("equalTo"); err != nil {
			return nil, err
		}
		qu.end, qu.hasStart, qu.hasEnd = qu.start, true, true
	}
	if q.Has("startAt") {
		if qu.start, err = bound("startAt"); err != nil {
			return nil, err
		}
		qu.hasStart = true
	}
	if q.Has("endAt") {
		if qu.end, err = bound("endAt"); err != nil {
			return nil, err
		}
		qu.hasEnd = true
	}
	return qu, nil
}

// Key identifies q among queries: equal queries, from REST or the WebSocket protocol, have equal
// keys, so their listeners share one cache.
func (q *Query) Key() string {
	return fmt.Sprintf("%q|%v|%v|%v|%v|%v|%d|%v|%d", q.orderBy, q.hasStart, q.start,
		q.hasEnd, q.end, q.limitF, q.first, q.limit, q.last)
}

// Apply selects the children of t the query names.
func (qu *Query) Apply(t any) any {
	m, ok := t.(map[string]any)
	if !ok {
		return t // a leaf has no children: Firebase answers it as is
	}
	type child struct {
		key string
		val any // what is ordered on
	}
	kids := make([]child, 0, len(m))
	for k, v := range m {
		c := child{key: k, val: v}
		switch {
		case qu.childPath != nil:
			c.val = At(v, qu.childPath)
		case qu.orderBy == "$key" || qu.orderBy == "$priority":
			c.val = nil
		}
		kids = append(kids, c)
	}
	byKey := qu.childPath == nil && qu.orderBy != "$value"
	order := func(a, b child) int {
		if !byKey {
			if c := compareValues(a.val, b.val); c != 0 {
				return c
			}
		}
		return CompareKeys(a.key, b.key)
	}
	slices.SortFunc(kids, order)
	keep := kids[:0]
	for _, c := range kids {
		var v any = c.val
		if byKey {
			v = Leaf(strconv.Quote(c.key))
		}
		if qu.hasStart && compareBound(v, c.key, qu.start, byKey) < 0 {
			continue
		}
		if qu.hasEnd && compareBound(v, c.key, qu.end, byKey) > 0 {
			continue
		}
		keep = append(keep, c)
	}
	if qu.limitF && len(keep) > qu.first {
		keep = keep[:qu.first]
	}
	if qu.limit && len(keep) > qu.last {
		keep = keep[len(keep)-qu.last:]
	}
	out := make(map[string]any, len(keep))
	for _, c := range keep {
		out[c.key] = m[c.key]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func compareBound(v any, key string, b any, byKey bool) int {
	if byKey {
		s, _ := strconv.Unquote(string(b.(Leaf)))
		return CompareKeys(key, s)
	}
	return compareValues(v, b)
}

// At is the subtree of t at rel.
func At(t any, rel []string) any {
	for _, s := range rel {
		m, ok := t.(map[string]any)
		if !ok {
			return nil
		}
		t = m[s]
	}
	return t
}

// keyInt: keys that are 32-bit integers sort first, numerically (Firebase's key order).
func keyInt(k string) (int64, bool) {
	n, err := strconv.ParseInt(k, 10, 32)
	if err != nil || strconv.FormatInt(n, 10) != k {
		return 0, false
	}
	return n, true
}

// CompareKeys orders child keys as Firebase does: 32-bit integer keys first, numerically, then
// the others as strings.
func CompareKeys(a, b string) int {
	ai, aok := keyInt(a)
	bi, bok := keyInt(b)
	switch {
	case aok && bok:
		return cmp.Compare(ai, bi)
	case aok:
		return -1
	case bok:
		return 1
	}
	return cmp.Compare(a, b)
}

// rank is Firebase's type order: null < false < true < numbers < strings < objects.
func rank(v any) (int, float64, string) {
	switch x := v.(type) {
	case nil:
		return 0, 0, ""
	case Leaf:
		switch s := string(x); {
		case s == "false":
			return 1, 0, ""
		case s == "true":
			return 2, 0, ""
		case len(s) > 0 && s[0] == '"':
			u, _ := strconv.Unquote(s)
			var str string
			if json.Unmarshal([]byte(s), &str) == nil {
				u = str
			}
			return 4, 0, u
		default:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				f = math.NaN()
			}
			return 3, f, ""
		}
	}
	return 5, 0, ""
}

func compareValues(a, b any) int {
	ra, fa, sa := rank(a)
	rb, fb, sb := rank(b)
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	switch ra {
	case 3:
		return cmp.Compare(fa, fb)
	case 4:
		return cmp.Compare(sa, sb)
	}
	return 0
}
