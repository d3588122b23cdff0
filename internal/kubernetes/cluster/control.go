package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// A multi-node cluster's supervisor serves what only it can do on a control socket in the
// state directory, HTTP+JSON as the testbed's (`curl --unix-socket` works):
//
//	POST /nodes/{name}/restart   RestartNode; answers {"result": "restarted [...] on node NAME"}
//
// The socket is root's, mode 0600, in a state directory only root may change (checkStateDir),
// and the server answers only connections whose peer is root (SO_PEERCRED): root may do
// everything it offers anyway.
const controlSocket = "control.sock"

// restartTimeout bounds a restart: the store's, the API server's and containerd's waits.
const restartTimeout = 5 * time.Minute

// control is the supervisor's control server.
type control struct {
	srv  *http.Server
	done chan struct{}
}

// serveControl starts the control server on the state directory's socket.
func (c *Cluster) serveControl() (*control, error) {
	path := c.p.join(controlSocket)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// Connecting needs write permission on the socket file, which the umask takes from group
	// and others from the start (the process's umask is not changed here: it is every
	// goroutine's); the chmod then takes their read and search bits too.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	// And the kernel says who connected: a connection made before the chmod, by another user,
	// is closed unanswered.
	ln = rootOnly{ln.(*net.UnixListener)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /nodes/{name}/restart", func(w http.ResponseWriter, r *http.Request) {
		// A client that goes away mid-restart (Ctrl-C) must not leave the node half up: the
		// restart runs to its end (Down ends it).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), restartTimeout)
		defer cancel()
		what, began, err := c.RestartNode(ctx, r.PathValue("name"))
		switch {
		case errors.Is(err, errNoNode):
			httpjson.Error(w, http.StatusNotFound, err.Error())
		case errors.Is(err, errGoingDown):
			httpjson.Error(w, http.StatusServiceUnavailable, err.Error())
		case err != nil:
			httpjson.Error(w, http.StatusInternalServerError, err.Error())
		default:
			httpjson.Write(w, http.StatusOK, restartAnswer{Result: what, Began: began})
		}
	})
	ctl := &control{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
		WriteTimeout: restartTimeout + 30*time.Second}, done: make(chan struct{})}
	go func() { defer close(ctl.done); _ = ctl.srv.Serve(ln) }()
	return ctl, nil
}

// rootOnly accepts connections from root only (SO_PEERCRED).
type rootOnly struct{ *net.UnixListener }

func (l rootOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if peerUID(c) == 0 {
			return c, nil
		}
		c.Close()
	}
}

// peerUID is the user id of the process at the other end of c, or -1 if the kernel does not say.
func peerUID(c *net.UnixConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	uid := -1
	_ = rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid
}

// close stops the server, giving a restart under way a few seconds to answer.
func (ctl *control) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ctl.srv.Shutdown(ctx) != nil {
		_ = ctl.srv.Close()
	}
	<-ctl.done
}

// restartAnswer is POST /nodes/{name}/restart's answer: what was restarted, and when the
// daemons began to start (Cluster.RestartNode).
type restartAnswer struct {
	Result string    `json:"result"`
	Began  time.Time `json:"began"`
}

// RestartNode asks the supervisor of the cluster in stateDir to restart node's daemons
// (Cluster.RestartNode) and returns what it restarted and when they began to start (for
// WaitNodeReady).
func RestartNode(ctx context.Context, stateDir, node string) (string, time.Time, error) {
	sock := filepath.Join(stateDir, controlSocket)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://cluster/nodes/"+url.PathEscape(node)+"/restart", nil)
	if err != nil {
		return "", time.Time{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return "", time.Time{}, fmt.Errorf("no multi-node cluster runs in %s (nothing listens on %s; `continuum cluster status --state-dir %s`)", stateDir, sock, stateDir)
		}
		if errors.Is(err, fs.ErrPermission) {
			return "", time.Time{}, fmt.Errorf("the cluster's control socket %s is root's: run as root", sock)
		}
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	var body struct {
		restartAnswer
		httpjson.ErrorBody
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", time.Time{}, err
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return "", time.Time{}, fmt.Errorf("the cluster's supervisor answered %s: %q", resp.Status, b)
	}
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, errors.New(body.Error)
	}
	if body.Began.IsZero() {
		return "", time.Time{}, fmt.Errorf("the cluster's supervisor did not say when the restart began (an older continuum?): %q", b)
	}
	return body.Result, body.Began, nil
}
