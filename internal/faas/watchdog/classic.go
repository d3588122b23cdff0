package watchdog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
}

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
	cmd := exec.CommandContext(ctx, c.cfg.Process[0], c.cfg.Process[1:]...)
	cmd.Env = append(os.Environ(), c.cfg.Env...)
	cmd.Env = append(cmd.Env, "Http_Method="+r.Method, "Http_Path="+r.URL.Path, "Http_Query="+r.URL.RawQuery)
	for k, vs := range r.Header {
		cmd.Env = append(cmd.Env, "Http_"+strings.ReplaceAll(k, "-", "_")+"="+strings.Join(vs, ", "))
	}
	if c.cfg.CGI {
		cmd.Env = append(cmd.Env, "CONTINUUM_CGI=1")
	}
	cmd.Stdin = bytes.NewReader(body)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
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
