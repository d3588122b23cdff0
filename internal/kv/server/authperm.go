package server

import (
	"bytes"
	"sort"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// keySpan is a half-open key interval [start, end); a nil end is +infinity (etcd's "\x00"
// range end).
type keySpan struct{ start, end []byte }

// userPerms are one user's permissions merged over its roles, each list sorted by start.
type userPerms struct {
	root        bool
	read, write []keySpan
}

// permSpan turns a permission (or a request's key and range end) into a span: an empty end
// is the single key (the span up to the key's successor, key+"\x00"), "\x00" is open.
func permSpan(key, end []byte) keySpan {
	switch {
	case len(end) == 0:
		return keySpan{start: key, end: append(append(make([]byte, 0, len(key)+1), key...), 0)}
	case isOpenEnd(end):
		return keySpan{start: key}
	default:
		return keySpan{start: key, end: end}
	}
}

// covers reports whether the union of spans (sorted by start) covers want whole, as etcd's
// interval tree Contains does for a range and Intersects for a single key (a single key is
// the span [key, key+"\x00"), which a span covers exactly when it holds the key).
func covers(spans []keySpan, want keySpan) bool {
	cur := want.start
	for _, s := range spans {
		if bytes.Compare(s.start, cur) > 0 {
			return false // a gap before s: nothing later starts earlier
		}
		if s.end == nil {
			return true
		}
		if bytes.Compare(s.end, cur) > 0 {
			cur = s.end
			if want.end != nil && bytes.Compare(cur, want.end) >= 0 {
				return true
			}
		}
	}
	return false
}

// holds reports whether a span holds key: covers for a single key, without building the
// key's span (the request path's common case).
func holds(spans []keySpan, key []byte) bool {
	for _, s := range spans {
		if bytes.Compare(s.start, key) > 0 {
			return false
		}
		if s.end == nil || bytes.Compare(key, s.end) < 0 {
			return true
		}
	}
	return false
}

// rebuildLocked merges every user's permissions again (etcd's refreshRangePermCache): auth
// changes are rare, checks are frequent.
func (a *authStore) rebuildLocked() {
	perms := make(map[string]*userPerms, len(a.users))
	for name, u := range a.users {
		up := &userPerms{root: hasRootRole(u)}
		for _, rn := range u.Roles {
			r := a.roles[rn]
			if r == nil {
				continue
			}
			for _, p := range r.KeyPermission {
				s := permSpan(p.Key, p.RangeEnd)
				switch p.PermType {
				case authpb.READWRITE:
					up.read = append(up.read, s)
					up.write = append(up.write, s)
				case authpb.READ:
					up.read = append(up.read, s)
				case authpb.WRITE:
					up.write = append(up.write, s)
				}
			}
		}
		for _, l := range [][]keySpan{up.read, up.write} {
			sort.Slice(l, func(i, j int) bool { return bytes.Compare(l[i].start, l[j].start) < 0 })
		}
		perms[name] = up
	}
	a.perms = perms
}

// authInfo is who sends a request, and the auth revision their token was issued at (simple
// tokens and certificates carry the current one).
type authInfo struct {
	user string
	rev  authRev
}

// permitted is etcd's isOpPermitted: nobody (no token, no certificate) gets "user name is
// empty", a token issued before the store's revision (in the cluster's order of revisions,
// authRev.less) "auth revision is old", and otherwise the root role or a covering permission
// is needed. The revision is read under the lock, with the permissions it is the revision of.
func (a *authStore) permitted(ai authInfo, key, end []byte, write bool) error {
	if !a.enabled.Load() {
		return nil
	}
	if ai.rev.Rev == 0 {
		return rpctypes.ErrGRPCUserEmpty
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if ai.rev.less(a.rev()) {
		return rpctypes.ErrGRPCAuthOldRevision
	}
	up := a.perms[ai.user]
	if up == nil {
		return rpctypes.ErrGRPCPermissionDenied
	}
	if up.root {
		return nil
	}
	spans := up.read
	if write {
		spans = up.write
	}
	if len(end) == 0 {
		if holds(spans, key) {
			return nil
		}
	} else if covers(spans, permSpan(key, end)) {
		return nil
	}
	return rpctypes.ErrGRPCPermissionDenied
}

// adminPermitted is etcd's IsAdminPermitted: the root role is needed.
func (a *authStore) adminPermitted(ai *authInfo) error {
	if !a.enabled.Load() {
		return nil
	}
	if ai == nil || ai.user == "" {
		return rpctypes.ErrGRPCUserEmpty
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	up := a.perms[ai.user]
	if up == nil {
		return rpctypes.ErrGRPCUserNotFound
	}
	if !up.root {
		return rpctypes.ErrGRPCPermissionDenied
	}
	return nil
}
