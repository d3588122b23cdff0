package rtdb

import (
	"context"
	"errors"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// StreamReadAuth is the rules' check for a listener (SSE's StreamConfig.ReadAuth): the caller
// of r (auth=, access_token= or a Bearer header, as on every request) must be allowed by the
// rules to read path; the permission lasts until expires, the caller's ID token's expiry (zero:
// never), when the stream sends auth_revoked. A bad credential is an *AuthError (401 with its
// message); a denial is allowed false (401 "Permission denied").
func (s *Server) StreamReadAuth(r *http.Request, ns string, path []string) (allowed bool, expires time.Time, err error) {
	a, err := s.Authenticate(r)
	if err != nil {
		return false, time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(WithAuth(r.Context(), a), s.cfg.RequestTimeout)
	defer cancel()
	switch err := s.st.readAllowedLazy(ctx, ns, path); {
	case errors.Is(err, ErrPermissionDenied):
		return false, time.Time{}, nil
	case err != nil:
		return false, time.Time{}, err
	}
	if a != nil {
		expires = a.Expires
	}
	return true, expires, nil
}

// readAllowedLazy checks a read of path by the caller in ctx without reading the subtree first:
// one keys-only read of the rules key gives the revision, and the rules read at that revision
// only what their expressions ask for (a listener then reads the value itself).
func (s *store) readAllowedLazy(ctx context.Context, ns string, path []string) error {
	_, err := s.readAllowedRev(ctx, ns, path)
	return err
}

// readAllowedRev is readAllowedLazy that also returns the revision it judged at (0 when it
// judged nothing: no rules, or an admin).
func (s *store) readAllowedRev(ctx context.Context, ns string, path []string) (int64, error) {
	if s.rules == nil {
		return 0, nil
	}
	if a := AuthFrom(ctx); a != nil && a.Admin {
		return 0, nil
	}
	snap, err := s.rulesSnapshot(ctx, ns)
	if err != nil {
		return 0, err
	}
	return snap.rev, s.rules.checkReadPaths(ctx, s, ns, path, snap, nil)
}

// rulesSnapshot is a snapshot with no trees: the current revision and the mod revision of ns's
// rules key there (read keys-only). Rules judged on it read whatever they need at its revision.
func (s *store) rulesSnapshot(ctx context.Context, ns string) (*snapshot, error) {
	resp, err := s.kv.Get(ctx, s.rules.settingsKey(ns), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	snap := &snapshot{rev: resp.Header.Revision}
	if len(resp.Kvs) > 0 {
		snap.rulesRev = resp.Kvs[0].ModRevision
	}
	return snap, nil
}

// streamGrant is the security rules' ReadAuthorizer: StreamReadAuth, judged after taking the
// database's rules channel (Hub.RulesChanged), so a rules change the judgement did not see
// closes Changed, and the stream calls Recheck (the same judgement again).
func (s *Server) streamGrant(r *http.Request, ns string, path []string) (ReadGrant, error) {
	changed, err := s.hub.RulesChanged(r.Context(), ns)
	if err != nil {
		return ReadGrant{}, err
	}
	ok, exp, err := s.StreamReadAuth(r, ns, path)
	if err != nil {
		return ReadGrant{}, err
	}
	return ReadGrant{Allowed: ok, Expires: exp, Changed: changed,
		Recheck: func() (ReadGrant, error) { return s.streamGrant(r, ns, path) }}, nil
}
