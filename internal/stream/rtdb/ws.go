package rtdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// The Firebase Realtime Database WebSocket protocol (version 5), as the JS SDK speaks it
// (packages/database/src/realtime/Connection.ts, WebSocketConnection.ts and
// core/PersistentConnection.ts in firebase-js-sdk). The client connects to
// /.ws?v=5&ns=<database>; every message is one JSON object, sent as one text frame, or — when
// longer than wsMaxFrame — as a frame holding the number of frames followed by the parts:
//
//	server hello   {"t":"c","d":{"t":"h","d":{"ts":<ms>,"v":"5","h":"<host>","s":"<session>"}}}
//	request        {"t":"d","d":{"r":<n>,"a":"<action>","b":{...}}}
//	response       {"t":"d","d":{"r":<n>,"b":{"s":"ok"|"<error status>","d":<data or reason>}}}
//	data push      {"t":"d","d":{"a":"d"|"m","b":{"p":"<path>","d":<data>[,"t":<tag>]}}}
//	keep-alive     "0" (client to server, every 45 s; ignored)
//
// Actions: q listen and n unlisten (b: p, h, and q and t for queries), p put and m merge (h on a
// put: the SDK's hash of the value a transaction read; the put is applied only while the
// value still has it, else "datastale"), o, om and oc (onDisconnect put, merge and cancel),
// g get, auth, gauth, unauth, appcheck and s (stats).
const (
	wsProtocolVersion = "5"
	wsMaxFrame        = 16384 // the SDK's WEBSOCKET_MAX_FRAME_SIZE; it splits its own messages so too
	wsMaxQueued       = 64 << 20
)

// wsState is the server's WebSocket side: the open connections (their listens are
// subscriptions on the server's hub). Its zero value is ready; start runs once, on the first
// connection.
type wsState struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the connections' goroutines

	mu     sync.Mutex
	conns  map[*wsConn]struct{} // guarded by mu
	closed bool                 // guarded by mu
}

func (s *Server) wsStart() {
	s.ws.once.Do(func() {
		s.ws.ctx, s.ws.cancel = context.WithCancel(context.Background())
		s.ws.conns = map[*wsConn]struct{}{}
	})
}

// closeWS ends every WebSocket connection (running their onDisconnect writes), and waits for their goroutines.
func (s *Server) closeWS() {
	s.wsStart()
	s.ws.mu.Lock()
	s.ws.closed = true
	conns := make([]*wsConn, 0, len(s.ws.conns))
	for c := range s.ws.conns {
		conns = append(conns, c)
	}
	s.ws.mu.Unlock()
	s.ws.cancel()
	for _, c := range conns {
		c.close()
	}
	s.ws.wg.Wait()
}

var wsUpgrader = websocket.Upgrader{
	ReadBufferSize: 4096, WriteBufferSize: 4096,
	// Any origin may connect, as to Firebase's servers and emulator: the SDK runs in pages served
	// from anywhere, and a browser's WebSocket carries no credentials this server trusts.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveWS upgrades /.ws?v=5&ns=<ns> and serves the connection until it closes.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.wsStart()
	q := r.URL.Query()
	ns := q.Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !validNamespace(ns) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Invalid namespace %q: lowercase letters, digits and '-' only", ns))
		return
	}
	if v := q.Get("v"); v != "" && v != wsProtocolVersion {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Unsupported protocol version v=%q: this server speaks v=5", v))
		return
	}
	s.ws.mu.Lock()
	if s.ws.closed {
		s.ws.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "server closing")
		return
	}
	s.ws.wg.Add(1)
	s.ws.mu.Unlock()
	defer s.ws.wg.Done()
	wc, err := wsUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the error
	}
	c := &wsConn{s: s, c: wc, ns: ns, log: s.log.With("ns", ns, "remote", r.RemoteAddr),
		notify: make(chan struct{}, 1), closing: make(chan struct{}), listens: map[string]*wsListen{},
		hubWake: make(chan struct{}, 1), fwd: map[*wsListen]struct{}{}, recheck: make(chan chan struct{}), guardSig: make(chan struct{}, 1)}
	if c.rulesCh, err = s.hub.RulesChanged(r.Context(), ns); err != nil {
		c.log.Warn("websocket: cannot follow the rules", "err", err)
		wc.Close()
		return
	}
	s.ws.mu.Lock()
	if s.ws.closed {
		s.ws.mu.Unlock()
		wc.Close()
		return
	}
	s.ws.conns[c] = struct{}{}
	s.ws.mu.Unlock()
	c.serve(r.Host)
	s.ws.mu.Lock()
	delete(s.ws.conns, c)
	s.ws.mu.Unlock()
}

// wsConn is one client connection. Requests are handled one at a time, in order, on the
// reading goroutine (so one client's writes apply in the order it sent them); everything sent
// goes through one FIFO queue drained by the writing goroutine, so a listen's data, a write's
// acknowledgement and the changes taken from the hub for its listens leave in the order they
// were queued (ws_listen.go says how a write's change is queued before its "ok").
type wsConn struct {
	s   *Server
	c   *websocket.Conn
	ns  string
	log *slog.Logger

	qmu    sync.Mutex
	queue  [][]byte // guarded by qmu
	queued int      // guarded by qmu: bytes in queue
	notify chan struct{}

	closeOnce sync.Once
	closing   chan struct{}

	// hubWake is signalled by the hub when a listen's subscription may have events; fwd are
	// the listens the writing goroutine takes from (ws_listen.go). fwdMu makes taking and
	// queueing one step.
	hubWake chan struct{}
	fwdMu   sync.Mutex
	fwd     map[*wsListen]struct{} // guarded by fwdMu
	// rulesCh is the rules channel (Hub.RulesChanged) taken before the listens were last
	// judged; judgeDue says a judgement is due anyway (the caller changed since, or a listen
	// joined whose own judgement may be stale); while rulesCh is closed or judgeDue holds, the
	// listens' events stay in the hub until the guard has judged them again (ws_revoke.go).
	// epoch counts the changes of either, so a listen can tell one happened while it judged.
	rulesCh  <-chan struct{} // guarded by fwdMu
	judgeDue bool            // guarded by fwdMu
	epoch    uint64          // guarded by fwdMu
	waitRev  int64           // guarded by fwdMu: a revision held events wait for (ws_revoke.go)
	// recheck asks the guard goroutine to judge every listen again and close the channel it
	// carries when done; guardSig (capacity 1) wakes it without waiting (markAuthDirty,
	// waitRev).
	recheck  chan chan struct{}
	guardSig chan struct{}

	// Owned by the reading goroutine.
	listens map[string]*wsListen
	onDisc  []wsRequest

	authn wsAuth // the caller the rules see (auth_ws.go)
}

// wsRequest is a request's envelope and body.
type wsRequest struct {
	R json.RawMessage `json:"r"`
	A string          `json:"a"`
	B struct {
		P string          `json:"p"`
		D json.RawMessage `json:"d"`
		H *string         `json:"h"`
		Q json.RawMessage `json:"q"`
		T json.RawMessage `json:"t"`
		// Cred is an "auth"/"gauth" request's credential (auth_ws.go).
		Cred string `json:"cred"`
	} `json:"b"`
}

func (c *wsConn) serve(host string) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		c.writeLoop()
	}()
	go func() {
		defer wg.Done()
		c.guard()
	}()
	session := make([]byte, 16)
	rand.Read(session)
	c.send(map[string]any{"t": "c", "d": map[string]any{"t": "h", "d": map[string]any{
		"ts": c.s.cfg.Now().UnixMilli(), "v": wsProtocolVersion, "h": host, "s": hex.EncodeToString(session)}}})
	err := c.readLoop()
	if err != nil && !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
		select {
		case <-c.closing:
		default:
			c.log.Debug("websocket closed", "err", err)
		}
	}
	c.close()
	c.stopAuth()
	c.stopListens()
	wg.Wait()
	c.c.Close()
	c.runOnDisconnect()
}

// readLoop reads messages (joining multi-frame ones) and handles them until the connection ends.
func (c *wsConn) readLoop() error {
	c.c.SetReadLimit(1 << 20) // one frame: the SDK's are at most 16384 UTF-16 units
	limit := c.s.cfg.MaxBodyBytes + 64<<10
	for {
		_, msg, err := c.c.ReadMessage()
		if err != nil {
			return err
		}
		if len(msg) <= 6 {
			if n, err := strconv.Atoi(string(msg)); err == nil {
				if n == 0 { // keep-alive
					continue
				}
				var whole []byte
				for range n {
					_, part, err := c.c.ReadMessage()
					if err != nil {
						return err
					}
					if int64(len(whole)+len(part)) > limit {
						c.shutdown(fmt.Sprintf("message over %d bytes (--max-body-bytes)", c.s.cfg.MaxBodyBytes))
						return errors.New("message too large")
					}
					whole = append(whole, part...)
				}
				msg = whole
			}
		}
		if err := c.handleMessage(msg); err != nil {
			c.shutdown(err.Error())
			return err
		}
	}
}

// shutdown tells the client why the server ends the connection (the SDK logs it and stops
// reconnecting, as it does for a server-side shutdown), then closes.
func (c *wsConn) shutdown(reason string) {
	c.send(map[string]any{"t": "c", "d": map[string]any{"t": "s", "d": reason}})
	c.close()
}

func (c *wsConn) handleMessage(msg []byte) error {
	var env struct {
		T string          `json:"t"`
		D json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		return fmt.Errorf("invalid message: want a JSON object {\"t\":\"d\"|\"c\",\"d\":...}: %v", err)
	}
	switch env.T {
	case "c":
		var ctl struct {
			T string `json:"t"`
		}
		json.Unmarshal(env.D, &ctl)
		if ctl.T == "p" { // ping (the SDK sends it while upgrading transports)
			c.send(map[string]any{"t": "c", "d": map[string]any{"t": "o", "d": map[string]any{}}})
		}
		return nil
	case "d":
		var req wsRequest
		if err := json.Unmarshal(env.D, &req); err != nil {
			return fmt.Errorf("invalid request: want {\"r\":n,\"a\":action,\"b\":{...}}: %v", err)
		}
		status, data := c.handle(&req)
		if req.R != nil {
			c.send(map[string]any{"t": "d", "d": map[string]any{"r": req.R, "b": map[string]any{"s": status, "d": data}}})
		}
		return nil
	}
	return fmt.Errorf("invalid message type %q: want \"d\" (data) or \"c\" (control)", env.T)
}

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
	var he *httpError
	switch {
	case errors.As(err, &f):
		return f.status, f.reason
	case errors.As(err, &he):
		return "invalid_data", he.msg
	case errors.Is(err, errTooLarge):
		return "too_big", err.Error()
	case errors.Is(err, errBusy):
		return "unavailable", err.Error()
	case errors.Is(err, ErrPermissionDenied):
		return "permission_denied", "Permission denied"
	}
	log.Warn("websocket request failed", "err", err)
	return "internal_error", err.Error()
}

// path parses a request's path.
func (c *wsConn) path(p string) ([]string, error) {
	path, err := ParsePath(p)
	if err != nil {
		return nil, &wsFail{"invalid_path", err.Error()}
	}
	return path, nil
}

// updates turns a put's or merge's body into store updates.
func (c *wsConn) updates(req *wsRequest) ([]update, error) {
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
	v, err := parseJSON(raw)
	if err != nil {
		return nil, invalid("%v", err)
	}
	switch req.A {
	case "p", "o":
		t, err := normalize(v, len(path))
		if err != nil {
			return nil, invalid("%v", err)
		}
		return []update{{path, t}}, nil
	}
	ups, _, err := patchUpdates(path, v)
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
		_, rev, err = c.s.st.writeRev(ctx, c.ns, ups, nil)
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
func (c *wsConn) compareAndSet(ctx context.Context, u update, h string) (int64, error) {
	_, rev, err := c.s.st.writeRev(ctx, c.ns, []update{u}, func(cur any) bool { return sdkHash(cur) == h })
	var pf preconditionFailed
	if errors.As(err, &pf) {
		// The SDK reruns the transaction as soon as it reads "datastale", on the value its
		// listen has: send that listen the current value first, or the rerun is stale too.
		if err := c.settle(ctx, pf.rev); err != nil {
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
	t, err := c.s.st.get(ctx, c.ns, path)
	if err != nil {
		return nil, err
	}
	if qu != nil {
		t = qu.apply(t)
	}
	return output(t), nil
}

// maxOnDisconnect bounds the onDisconnect writes one connection keeps (each holds its body in
// memory until the connection ends): a client cannot grow the server's memory without bound.
const maxOnDisconnect = 256

// onDisconnect registers an onDisconnect put or merge. The rules judge it now, as the caller
// is and on the data as it is, as Firebase does: a denied one answers permission_denied (the
// SDK's promise rejects) and is not kept. It is judged again when it runs (runOnDisconnect).
func (c *wsConn) onDisconnect(ctx context.Context, req *wsRequest) error {
	ups, err := c.updates(req)
	if err != nil {
		return err
	}
	if len(c.onDisc) >= maxOnDisconnect {
		return &wsFail{"too_big", fmt.Sprintf("at most %d onDisconnect writes per connection: cancel some (oc) first", maxOnDisconnect)}
	}
	if len(ups) > 0 {
		if err := c.s.st.mayWrite(ctx, c.ns, ups); err != nil {
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
		p, _ := ParsePath(od.B.P)
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
			_, err = c.s.st.write(ctx, c.ns, ups, nil)
		}
		cancel()
		if err != nil {
			c.log.Warn("onDisconnect write failed", "path", req.B.P, "err", err)
		}
	}
	c.onDisc = nil
}

// send queues one message.
func (c *wsConn) send(v any) { c.sendBytes(encodeMsg(v)) }

// encodeMsg is v's JSON, nil when it cannot be encoded: only a kv value under the prefix that
// is not JSON (written there by something else than this server) can cause that; the message
// is then dropped and logged rather than sent broken.
func encodeMsg(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("websocket message not encodable: a kv value under the prefix is not JSON", "err", err)
		return nil
	}
	return b
}

// sendBytes queues an encoded message (shared, never modified); a client that lets
// wsMaxQueued bytes pile up is disconnected (it reconnects and listens afresh) rather than
// growing the server's memory without bound.
func (c *wsConn) sendBytes(b []byte) {
	if b == nil {
		return
	}
	c.qmu.Lock()
	if c.queued+len(b) > wsMaxQueued {
		c.qmu.Unlock()
		c.log.Warn("websocket client too slow: disconnecting", "queued_bytes", c.queued)
		c.close()
		return
	}
	c.queue = append(c.queue, b)
	c.queued += len(b)
	c.qmu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *wsConn) close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		// Unblocks the reading goroutine; the writer ends on closing.
		c.c.SetReadDeadline(time.Unix(1, 0))
	})
}

func (c *wsConn) writeLoop() {
	for {
		select {
		case <-c.closing:
			c.flush() // the last messages (a shutdown reason) still go out, best effort
			return
		case <-c.notify:
		case <-c.hubWake:
			c.fwdMu.Lock()
			c.takeAllLocked()
			c.fwdMu.Unlock()
		}
		if err := c.flush(); err != nil {
			c.close()
			return
		}
	}
}

func (c *wsConn) flush() error {
	c.qmu.Lock()
	msgs := c.queue
	c.queue, c.queued = nil, 0
	c.qmu.Unlock()
	for _, m := range msgs {
		c.c.SetWriteDeadline(time.Now().Add(c.s.cfg.RequestTimeout))
		if err := c.writeMessage(m); err != nil {
			return err
		}
	}
	return nil
}

// writeMessage sends m in one frame, or as its frame count and parts of at most wsMaxFrame
// bytes, each cut at a UTF-8 character boundary (every text frame must be valid UTF-8).
func (c *wsConn) writeMessage(m []byte) error {
	if len(m) <= wsMaxFrame {
		return c.c.WriteMessage(websocket.TextMessage, m)
	}
	var parts [][]byte
	for len(m) > 0 {
		n := min(wsMaxFrame, len(m))
		for n < len(m) && n > 0 && !utf8.RuneStart(m[n]) {
			n--
		}
		parts = append(parts, m[:n])
		m = m[n:]
	}
	if err := c.c.WriteMessage(websocket.TextMessage, []byte(strconv.Itoa(len(parts)))); err != nil {
		return err
	}
	for _, p := range parts {
		if err := c.c.WriteMessage(websocket.TextMessage, p); err != nil {
			return err
		}
	}
	return nil
}

// isPrefix says whether path p is at or above path of.
func isPrefix(p, of []string) bool {
	if len(p) > len(of) {
		return false
	}
	for i := range p {
		if p[i] != of[i] {
			return false
		}
	}
	return true
}
