package watchdog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// classic forks and execs the process for every request: the body on its stdin, the request
// line and headers in its environment (Http_Method, Http_Path, Http_Query, Http_<Header>, the
// classic watchdog's names), the response from its stdout.
type classic struct {
	cfg   *Config
	cpuNS atomic.Int64 // CPU of the processes that ended
	logMu sync.Mutex   // one process's stderr reaches cfg.Log in one piece
}

// maxLog is how much of one classic process's stderr goes to the function's log.
const maxLog = 64 << 10

func (c *classic) healthy() bool { return true }
func (c *classic) close()        {}

func (c *classic) cpuSeconds() float64 { return time.Duration(c.cpuNS.Load()).Seconds() }

func (c *classic) invoke(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("body larger than the limit of %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.ExecTimeout)
	defer cancel()
	if c.cfg.Zygote != "" {
		c.invokeZygote(ctx, w, r, body)
		return
	}
	cmd := exec.CommandContext(ctx, c.cfg.Process[0], c.cfg.Process[1:]...)
	cmd.Env = append(os.Environ(), c.cfg.Env...)
	for _, kv := range requestEnv(r, len(body)) {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	if c.cfg.CGI {
		cmd.Env = append(cmd.Env, "CONTINUUM_CGI=1")
	}
	cmd.Stdin = bytes.NewReader(body)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 4096}
	log := &headBuffer{max: maxLog}
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(stderr, log)
	defer c.writeLog(log)
	// Its own process group, so a timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ps := cmd.ProcessState; ps != nil {
		c.cpuNS.Add(int64(ps.UserTime() + ps.SystemTime()))
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		http.Error(w, fmt.Sprintf("function exceeded its exec timeout of %v", c.cfg.ExecTimeout), http.StatusGatewayTimeout)
		return
	case r.Context().Err() != nil:
		return // the client left
	case err != nil && !c.cfg.CGI:
		http.Error(w, fmt.Sprintf("function process failed (%v): %s", err, stdout.String()+stderr.String()), http.StatusInternalServerError)
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("function process failed (%v): %s", err, stderr.String()), http.StatusInternalServerError)
		return
	}
	if !c.cfg.CGI {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(stdout.Bytes())
		return
	}
	writeCGI(w, stdout.Bytes())
}

// writeCGI answers with a CGI response: header lines (Status gives the code), a blank line,
// the body.
func writeCGI(w http.ResponseWriter, out []byte) {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(out)))
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		http.Error(w, "function wrote a malformed CGI response: "+err.Error(), http.StatusBadGateway)
		return
	}
	status := http.StatusOK
	if s := hdr.Get("Status"); s != "" {
		code, err := strconv.Atoi(strings.Fields(s)[0])
		if err != nil || code < 100 || code > 599 {
			http.Error(w, fmt.Sprintf("function wrote CGI status %q: want a code 100-599", s), http.StatusBadGateway)
			return
		}
		status = code
		hdr.Del("Status")
	}
	for k, vs := range hdr {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	body, _ := io.ReadAll(tp.R)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeLog copies what a process wrote to stderr (a traceback) to the function's log.
func (c *classic) writeLog(b *headBuffer) {
	if len(b.b) == 0 {
		return
	}
	if b.dropped > 0 {
		b.b = fmt.Appendf(b.b, "\n[watchdog: %d more bytes of this process's stderr not logged]\n", b.dropped)
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	_, _ = c.cfg.Log.Write(b.b)
}

// headBuffer keeps the first max bytes written and counts the rest.
type headBuffer struct {
	max     int
	b       []byte
	dropped int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	n := min(len(p), h.max-len(h.b))
	h.b = append(h.b, p[:n]...)
	h.dropped += len(p) - n
	return len(p), nil
}

// tailBuffer keeps the last max bytes written (a process's stderr, for error messages).
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }

// requestEnv is the request line and headers as the classic watchdog passes them (Http_Method,
// Http_Path, Http_Query, Http_<Header_Name>), as ordered pairs. The headers come in the order
// an http-mode upstream receives them from the reverse proxy (Host, User-Agent, Content-Length,
// then the rest sorted by name), so a handler iterating event.headers sees the same in both
// modes. A name with an underscore is left out, as Waitress leaves it out for the template:
// in the environment it could not be told from a dash, so a client could pose as a header a
// proxy sets. A repeated header is one value joined by ", "; a body that came chunked is
// given its length as Content-Length, as Waitress does, since the process gets it whole.
func requestEnv(r *http.Request, bodyLen int) [][2]string {
	env := [][2]string{{"Http_Method", r.Method}, {"Http_Path", r.URL.Path}, {"Http_Query", r.URL.RawQuery}}
	add := func(name, value string) {
		env = append(env, [2]string{"Http_" + strings.ReplaceAll(name, "-", "_"), value})
	}
	if r.Host != "" {
		add("Host", r.Host)
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		add("User-Agent", ua)
	}
	if cl := r.Header.Get("Content-Length"); cl != "" {
		add("Content-Length", cl)
	} else if bodyLen > 0 || r.ContentLength < 0 {
		add("Content-Length", strconv.Itoa(bodyLen))
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length":
			continue
		}
		if !strings.Contains(k, "_") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		add(k, strings.Join(r.Header[k], ", "))
	}
	return env
}

// invokeZygote runs the request in a child the zygote forks (no exec, no imports): the request
// goes over the zygote's socket, the child answers its pid, then the CGI response.
func (c *classic) invokeZygote(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.cfg.Zygote)
	if err != nil {
		http.Error(w, "function zygote: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	hdr, _ := json.Marshal(map[string]any{"classic": map[string]any{"env": requestEnv(r, len(body)), "body_len": len(body), "cgroups": ownCgroupProcs()}})
	if _, err := conn.Write(append(append(hdr, '\n'), body...)); err != nil {
		http.Error(w, "function zygote: "+err.Error(), http.StatusBadGateway)
		return
	}
	rd := bufio.NewReader(conn)
	var pid struct {
		PID int `json:"pid"`
	}
	line, err := rd.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &pid)
	}
	var out []byte
	if err == nil {
		out, err = io.ReadAll(rd)
	}
	switch {
	// The connection's deadline is the context's: either may be seen first.
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		if pid.PID > 0 {
			_ = syscall.Kill(pid.PID, syscall.SIGKILL)
		}
		http.Error(w, fmt.Sprintf("function exceeded its exec timeout of %v", c.cfg.ExecTimeout), http.StatusGatewayTimeout)
	case r.Context().Err() != nil:
		if pid.PID > 0 {
			_ = syscall.Kill(pid.PID, syscall.SIGKILL)
		}
	case err != nil || len(out) == 0:
		http.Error(w, fmt.Sprintf("function process failed: %v", err), http.StatusInternalServerError)
	default:
		writeCGI(w, out)
	}
}
