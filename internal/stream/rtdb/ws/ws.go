package ws

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

	"github.com/gorilla/websocket"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
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

// Config is what the WebSocket protocol needs of the server.
type Config struct {
	Hub      *hub.Hub
	Store    *store.Store
	Verifier *auth.Verifier
	Logger   *slog.Logger
	// DefaultNamespace is the database of connections without ?ns=.
	DefaultNamespace string
	MaxBodyBytes     int64         // bounds a write's data
	RequestTimeout   time.Duration // bounds one request's kv work, and one frame's write
	Now              func() time.Time
	// FirebaseSDKDir is the npm firebase package whose browser modules the dashboard loads.
	FirebaseSDKDir string
}

// Server serves the WebSocket protocol (ServeHTTP, on /.ws) and the dashboard
// (ServeDashboard); it is safe for concurrent use.
type Server struct {
	cfg  Config
	hub  *hub.Hub
	st   *store.Store
	auth *auth.Verifier
	log  *slog.Logger
	ws   wsState
}

// New serves WebSocket connections on cfg's hub and store.
func New(cfg Config) *Server {
	return &Server{cfg: cfg, hub: cfg.Hub, st: cfg.Store, auth: cfg.Verifier, log: cfg.Logger}
}

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

// Close ends every WebSocket connection (running their onDisconnect writes), and waits for
// their goroutines.
func (s *Server) Close() {
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

// ServeHTTP upgrades /.ws?v=5&ns=<ns> and serves the connection until it closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.wsStart()
	q := r.URL.Query()
	ns := q.Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !tree.ValidNamespace(ns) {
		rest.WriteError(w, http.StatusBadRequest, fmt.Sprintf("Invalid namespace %q: lowercase letters, digits and '-' only", ns))
		return
	}
	if v := q.Get("v"); v != "" && v != wsProtocolVersion {
		rest.WriteError(w, http.StatusBadRequest, fmt.Sprintf("Unsupported protocol version v=%q: this server speaks v=5", v))
		return
	}
	s.ws.mu.Lock()
	if s.ws.closed {
		s.ws.mu.Unlock()
		rest.WriteError(w, http.StatusServiceUnavailable, "server closing")
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
// were queued (listen.go says how a write's change is queued before its "ok").
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
	// the listens the writing goroutine takes from (listen.go). fwdMu makes taking and
	// queueing one step.
	hubWake chan struct{}
	fwdMu   sync.Mutex
	fwd     map[*wsListen]struct{} // guarded by fwdMu
	// rulesCh is the rules channel (Hub.RulesChanged) taken before the listens were last
	// judged; judgeDue says a judgement is due anyway (the caller changed since, or a listen
	// joined whose own judgement may be stale); while rulesCh is closed or judgeDue holds, the
	// listens' events stay in the hub until the guard has judged them again (revoke.go).
	// epoch counts the changes of either, so a listen can tell one happened while it judged.
	rulesCh  <-chan struct{} // guarded by fwdMu
	judgeDue bool            // guarded by fwdMu
	epoch    uint64          // guarded by fwdMu
	waitRev  int64           // guarded by fwdMu: a revision held events wait for (revoke.go)
	// recheck asks the guard goroutine to judge every listen again and close the channel it
	// carries when done; guardSig (capacity 1) wakes it without waiting (markAuthDirty,
	// waitRev).
	recheck  chan chan struct{}
	guardSig chan struct{}

	// Owned by the reading goroutine.
	listens map[string]*wsListen
	onDisc  []wsRequest

	authn wsAuth // the caller the rules see (auth.go)
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
		// Cred is an "auth"/"gauth" request's credential (auth.go).
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
	// readLoop returns only when the connection ends, always with the reason.
	if err := c.readLoop(); !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
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
