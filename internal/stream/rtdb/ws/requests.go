package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// wsFail is a request's error status and its reason, which the SDK shows as "<STATUS>: reason".
type wsFail struct{ status, reason string }

func (f *wsFail) Error() string { return f.status + ": " + f.reason }

func invalid(format string, a ...any) error {
	return &wsFail{"invalid_data", fmt.Sprintf(format, a...)}
}

// handle runs one request and returns the response's status and data.
func (c *wsConn) handle(req *wsRequest) (string, any) {
	ctx, cancel := context.WithTimeout(c.s.ws.ctx, c.s.cfg.RequestTimeout)
	defer cancel()
	ctx = c.withAuth(ctx)
	var data any = ""
	var err error
	switch req.A {
	case "q":
		data, err = c.listen(ctx, req)
	case "n":
		c.unlisten(req)
	case "p", "m":
		err = c.write(ctx, req)
	case "o", "om":
		err = c.onDisconnect(ctx, req)
	case "oc":
		err = c.cancelOnDisconnect(req)
	case "g":
		data, err = c.get(ctx, req)
	case "auth", "gauth":
		if data, err = c.authenticate(req.B.Cred); err == nil {
			c.recheckListens() // its listens are judged as the new caller before the "ok"
		}
	case "unauth":
		c.setAuth(nil)
		c.recheckListens()
	case "appcheck", "unappeck", "s":
	default:
		err = &wsFail{"invalid_action", fmt.Sprintf("unknown action %q: want q, n, p, m, o, om, oc, g, auth, gauth, unauth or s", req.A)}
	}
	if err != nil {
		return wsStatus(err, c.log)
	}
	return "ok", data
}

// wsStatus maps an error to a response status and reason.
func wsStatus(err error, log *slog.Logger) (string, any) {
	var f *wsFail
	var ie *tree.InvalidError
	switch {
	case errors.As(err, &f):
		return f.status, f.reason
	case errors.As(err, &ie):
		return "invalid_data", ie.Msg
	case errors.Is(err, store.ErrTooLarge):
		return "too_big", err.Error()
	case errors.Is(err, store.ErrBusy):
		return "unavailable", err.Error()
	case errors.Is(err, auth.ErrPermissionDenied):
		return "permission_denied", "Permission denied"
	}
	log.Warn("websocket request failed", "err", err)
	return "internal_error", err.Error()
}

// path parses a request's path.
func (c *wsConn) path(p string) ([]string, error) {
	path, err := tree.ParsePath(p)
	if err != nil {
		return nil, &wsFail{"invalid_path", err.Error()}
	}
	return path, nil
}

// updates turns a put's or merge's body into store updates.
func (c *wsConn) updates(req *wsRequest) ([]store.Update, error) {
	path, err := c.path(req.B.P)
	if err != nil {
		return nil, err
	}
	if int64(len(req.B.D)) > c.s.cfg.MaxBodyBytes {
		return nil, &wsFail{"too_big", fmt.Sprintf("data over %d bytes (--max-body-bytes)", c.s.cfg.MaxBodyBytes)}
	}
	raw := req.B.D
	if len(raw) == 0 {
		raw = []byte("null")
	}
	v, err := tree.ParseJSON(raw)
	if err != nil {
		return nil, invalid("%v", err)
	}
	switch req.A {
	case "p", "o":
		t, err := tree.Normalize(v, len(path))
		if err != nil {
			return nil, invalid("%v", err)
		}
		return []store.Update{{Path: path, Val: t}}, nil
	}
	ups, _, err := store.PatchUpdates(path, v)
	return ups, err
}

// write applies a put or merge and returns once the connection's listens have queued the
// change (settle), so that the acknowledgement queued next follows the data: the SDK shows the
// old value again if a write's "ok" comes before the server's data for it.
func (c *wsConn) write(ctx context.Context, req *wsRequest) error {
	ups, err := c.updates(req)
	if err != nil {
		return err
	}
	if len(ups) == 0 { // a merge of nothing
		return nil
	}
	var rev int64
	if req.B.H != nil {
		if req.A != "p" {
			return invalid("a hash (h) is only allowed on a put (p)")
		}
		rev, err = c.compareAndSet(ctx, ups[0], *req.B.H)
	} else {
		_, rev, err = c.s.st.WriteRev(ctx, c.ns, ups, nil)
	}
	if err != nil || rev == 0 {
		return err
	}
	return c.settle(ctx, rev)
}

// compareAndSet is a transaction's put: applied only while the value at the path has the SDK
// hash h. The store judges it by the rules first (write, and read: the outcome tells whether
// the value has hash h), then tests the hash and writes in one guarded Txn, so a change
// between the read and the write is caught and the test rerun.
func (c *wsConn) compareAndSet(ctx context.Context, u store.Update, h string) (int64, error) {
	_, rev, err := c.s.st.WriteRev(ctx, c.ns, []store.Update{u}, func(cur any) bool { return Hash(cur) == h })
	var pf store.PreconditionFailed
	if errors.As(err, &pf) {
		// The SDK reruns the transaction as soon as it reads "datastale", on the value its
		// listen has: send that listen the current value first, or the rerun is stale too.
		if err := c.settle(ctx, pf.Rev); err != nil {
			return 0, err
		}
		return 0, &wsFail{"datastale", "the value changed since the transaction read it"}
	}
	return rev, err
}

func (c *wsConn) get(ctx context.Context, req *wsRequest) (any, error) {
	path, err := c.path(req.B.P)
	if err != nil {
		return nil, err
	}
	qu, err := wireQuery(req.B.Q)
	if err != nil {
		return nil, err
	}
	t, err := c.s.st.Get(ctx, c.ns, path)
	if err != nil {
		return nil, err
	}
	if qu != nil {
		t = qu.Apply(t)
	}
	return tree.Output(t), nil
}

// MaxOnDisconnect bounds the onDisconnect writes one connection keeps (each holds its body in
// memory until the connection ends): a client cannot grow the server's memory without bound.
const MaxOnDisconnect = 256

// onDisconnect registers an onDisconnect put or merge. The rules judge it now, as the caller
// is and on the data as it is, as Firebase does: a denied one answers permission_denied (the
// SDK's promise rejects) and is not kept. It is judged again when it runs (runOnDisconnect).
func (c *wsConn) onDisconnect(ctx context.Context, req *wsRequest) error {
	ups, err := c.updates(req)
	if err != nil {
		return err
	}
	if len(c.onDisc) >= MaxOnDisconnect {
		return &wsFail{"too_big", fmt.Sprintf("at most %d onDisconnect writes per connection: cancel some (oc) first", MaxOnDisconnect)}
	}
	if len(ups) > 0 {
		if err := c.s.st.MayWrite(ctx, c.ns, ups); err != nil {
			return err
		}
	}
	c.onDisc = append(c.onDisc, *req)
	return nil
}

// cancelOnDisconnect drops the onDisconnect writes at or under the path.
func (c *wsConn) cancelOnDisconnect(req *wsRequest) error {
	path, err := c.path(req.B.P)
	if err != nil {
		return err
	}
	kept := c.onDisc[:0]
	for _, od := range c.onDisc {
		p, _ := tree.ParsePath(od.B.P)
		if !isPrefix(path, p) {
			kept = append(kept, od)
		}
	}
	c.onDisc = kept
	return nil
}

// runOnDisconnect applies the connection's onDisconnect writes, in the order they were set.
func (c *wsConn) runOnDisconnect() {
	for i := range c.onDisc {
		req := &c.onDisc[i]
		req.A = map[string]string{"o": "p", "om": "m"}[req.A]
		ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.RequestTimeout)
		ctx = c.withAuth(ctx) // judged as the caller was when the connection ended
		ups, err := c.updates(req)
		if err == nil && len(ups) > 0 {
			_, err = c.s.st.Write(ctx, c.ns, ups, nil)
		}
		cancel()
		if err != nil {
			c.log.Warn("onDisconnect write failed", "path", req.B.P, "err", err)
		}
	}
	c.onDisc = nil
}
