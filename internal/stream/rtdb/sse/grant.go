package sse

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// StreamReadAuth is the rules' check for a listener (SSE's StreamConfig.ReadAuth): the caller
// of r (auth=, access_token= or a Bearer header, as on every request) must be allowed by the
// rules to read path; the permission lasts until expires, the caller's ID token's expiry (zero:
// never), when the stream sends auth_revoked. A bad credential is an *AuthError (401 with its
// message); a denial is allowed false (401 "Permission denied").
func (s *Server) StreamReadAuth(r *http.Request, ns string, path []string) (allowed bool, expires time.Time, err error) {
	a, err := s.auth.Authenticate(r)
	if err != nil {
		return false, time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(auth.WithAuth(r.Context(), a), s.cfg.RequestTimeout)
	defer cancel()
	switch err := s.st.ReadAllowedLazy(ctx, ns, path); {
	case errors.Is(err, auth.ErrPermissionDenied):
		return false, time.Time{}, nil
	case err != nil:
		return false, time.Time{}, err
	}
	if a != nil {
		expires = a.Expires
	}
	return true, expires, nil
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
