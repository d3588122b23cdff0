package ws

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// wsAuth is a WebSocket connection's caller: set by the "auth"/"gauth" requests (the SDK sends
// one after connecting and whenever its token is refreshed), cleared by "unauth" and when the
// token expires. Requests are handled one at a time on the reading goroutine, which is the only
// one that reads or sets auth; the expiry timer only marks it expired and queues "ac".
type wsAuth struct {
	mu      sync.Mutex
	auth    *auth.Auth  // guarded by mu
	timer   *time.Timer // guarded by mu: fires at auth's expiry
	expired bool        // guarded by mu: the timer fired for the current auth
}

// withAuth is ctx carrying the connection's current caller.
func (c *wsConn) withAuth(ctx context.Context) context.Context {
	c.authn.mu.Lock()
	a := c.authn.auth
	// The timer may fire late (a busy machine, a stopped process); the clock decides too, so
	// no request after the token's exp runs as its caller.
	if c.authn.expired || (a != nil && !a.Expires.IsZero() && !c.s.cfg.Now().Before(a.Expires)) {
		a = nil
	}
	c.authn.mu.Unlock()
	return auth.WithAuth(ctx, a)
}

// authenticate handles "auth"/"gauth" {cred}: the answer the SDK expects, or an invalid_token
// failure (the SDK then drops the connection and retries with a refreshed token).
func (c *wsConn) authenticate(cred string) (any, error) {
	a, err := c.s.auth.Verify(cred)
	var ae *auth.AuthError
	if errors.As(err, &ae) {
		return nil, &wsFail{"invalid_token", ae.Msg}
	}
	if err != nil {
		return nil, err
	}
	c.setAuth(a)
	var claims any
	var expires int64
	if a != nil {
		if a.Claims != nil {
			claims = a.Claims
		}
		if !a.Expires.IsZero() {
			expires = a.Expires.Unix()
		}
	}
	return map[string]any{"auth": claims, "expires": expires}, nil
}

// setAuth replaces the caller (nil: "unauth") and arms the expiry: when an ID token expires, the
// client is told with "ac" (expired_token), as Firebase does, and the connection's requests count
// as unauthenticated until it authenticates again.
func (c *wsConn) setAuth(a *auth.Auth) {
	c.authn.mu.Lock()
	defer c.authn.mu.Unlock()
	if c.authn.timer != nil {
		c.authn.timer.Stop()
		c.authn.timer = nil
	}
	c.authn.auth, c.authn.expired = a, false
	c.markAuthDirty() // after the change: the guard clears it before reading the caller
	if a == nil || a.Expires.IsZero() {
		return
	}
	d := a.Expires.Sub(c.s.cfg.Now())
	c.authn.timer = time.AfterFunc(max(d, 0), func() {
		c.authn.mu.Lock()
		if c.authn.auth != a {
			c.authn.mu.Unlock()
			return
		}
		c.authn.expired = true
		c.markAuthDirty()
		c.authn.mu.Unlock()
		c.send(map[string]any{"t": "d", "d": map[string]any{"a": "ac",
			"b": map[string]any{"s": "expired_token", "d": "Auth token is expired."}}})
	})
}

// stopAuth stops the expiry timer of a closed connection.
func (c *wsConn) stopAuth() {
	c.authn.mu.Lock()
	if c.authn.timer != nil {
		c.authn.timer.Stop()
	}
	c.authn.mu.Unlock()
}
