package rules

import (
	"errors"
	"time"
)

// Auth is the caller as rules see it (the `auth` variable); a nil *Auth is an unauthenticated
// caller (`auth == null`).
type Auth struct {
	UID      string
	Provider string         // e.g. "password", "anonymous", "custom"
	Token    map[string]any // the ID token's claims
}

func (a *Auth) value() any {
	if a == nil {
		return nil
	}
	tok := a.Token
	if tok == nil {
		tok = map[string]any{}
	}
	return map[string]any{"uid": a.UID, "provider": a.Provider, "token": tok}
}

// step is one level of a path matched against the rules tree.
type step struct {
	n    *node
	vars map[string]string
}

// match follows path down the rules tree: a literal child before the wildcard, as Firebase does.
// It returns the nodes from the root to the deepest one matched (len(result)-1 levels deep).
func (r *Ruleset) match(from step, path []string) []step {
	steps := []step{from}
	cur := from
	for _, k := range path {
		next, ok := cur.n.children[k]
		vars := cur.vars
		if !ok {
			if cur.n.wild == nil {
				break
			}
			next = cur.n.wild
			vars = make(map[string]string, len(cur.vars)+1)
			for n, v := range cur.vars {
				vars[n] = v
			}
			vars[cur.n.wildName] = k
		}
		cur = step{next, vars}
		steps = append(steps, cur)
	}
	return steps
}

// eval runs one rule; an expression error is a denial, a Data error is returned.
func eval(r *rule, en *env) (bool, error) {
	ok, err := en.evalBool(r.expr)
	if err != nil {
		var re readError
		if errors.As(err, &re) {
			return false, re.err
		}
		return false, nil
	}
	return ok, nil
}

// CanRead reports whether auth may read path: some .read on the way from the root to path
// (inclusive) grants it. A query is allowed exactly when a plain read of its location is.
func (r *Ruleset) CanRead(auth *Auth, path []string, data Data, now time.Time) (bool, error) {
	en := &env{auth: auth.value(), now: float64(now.UnixMilli()), root: newView(data)}
	for d, st := range r.match(step{r.root, nil}, path) {
		if st.n.read == nil {
			continue
		}
		en.path, en.vars = path[:d], st.vars
		if ok, err := eval(st.n.read, en); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// CanWrite reports whether auth may make all of ups at once (non-overlapping paths; values
// with server values already resolved): each path needs a .write grant on its way from the root,
// and every .validate at, under or above each path must hold on the new data (where it is not
// null). Expressions see data
// (before) through data and the result of all the updates as newData.
func (r *Ruleset) CanWrite(auth *Auth, ups []Update, data Data, now time.Time) (bool, error) {
	old := newView(data)
	en := &env{auth: auth.value(), now: float64(now.UnixMilli()), root: old,
		newRoot: newView(overlay{old, ups})}
	for _, u := range ups {
		granted := false
		steps := r.match(step{r.root, nil}, u.Path)
		for d, st := range steps {
			if st.n.write == nil {
				continue
			}
			en.path, en.vars = u.Path[:d], st.vars
			ok, err := eval(st.n.write, en)
			if err != nil {
				return false, err
			}
			if ok {
				granted = true
				break
			}
		}
		if !granted {
			return false, nil
		}
		// The ancestors' .validate: a write below a node changes that node's value, so its
		// .validate must hold on the new value too (as Firebase evaluates it on every node along
		// the write's path whose new value exists); otherwise writing one level below a validated
		// node would turn it into anything.
		for d, st := range steps {
			if d >= len(u.Path) || st.n.validate == nil {
				continue
			}
			if u.Value == nil { // a delete: the ancestor is validated only if it still exists
				nv, err := en.newRoot.get(u.Path[:d])
				if err != nil {
					return false, err
				}
				if nv == nil {
					continue
				}
			}
			en.path, en.vars = u.Path[:d], st.vars
			if ok, err := eval(st.n.validate, en); !ok || err != nil {
				return false, err
			}
		}
		if len(steps) != len(u.Path)+1 {
			continue // no rules at the written path, so none under it
		}
		if ok, err := r.validate(en, steps[len(steps)-1], u.Path, u.Value); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// validate checks the .validate rules at path (matched by st) and under it, for the new value v
// there; nodes whose new value is null are not validated.
func (r *Ruleset) validate(en *env, st step, path []string, v any) (bool, error) {
	if v == nil {
		return true, nil
	}
	if st.n.validate != nil {
		en.path, en.vars = path, st.vars
		if ok, err := eval(st.n.validate, en); !ok || err != nil {
			return false, err
		}
	}
	m, ok := v.(map[string]any)
	if !ok || (st.n.children == nil && st.n.wild == nil) {
		return true, nil
	}
	for k, c := range m {
		next := r.match(st, []string{k})
		if len(next) < 2 {
			continue
		}
		if ok, err := r.validate(en, next[1], append(path[:len(path):len(path)], k), c); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}
