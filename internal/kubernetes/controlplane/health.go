package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// logTailLines is how much of a component's log an error carries.
const logTailLines = 30

// waitHealthy polls url until it answers 200, the process exits, ctx ends or ReadyTimeout
// passes. The apiserver's endpoint is asked with the admin's certificate (system:masters is
// authorized before the bootstrap RBAC roles exist); the others serve a self-signed
// certificate of their own, and their /healthz needs no identity.
func (cp *ControlPlane) waitHealthy(ctx context.Context, pr *process, url string, admin bool) error {
	ctx, cancel := context.WithTimeout(ctx, cp.cfg.ReadyTimeout)
	defer cancel()
	hc := cp.healthClient(admin)
	defer hc.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		ok, detail := probe(ctx, hc, url)
		if ok {
			return nil
		}
		last = detail
		select {
		case <-pr.done:
			return fmt.Errorf("%s exited before it was healthy (%v); log %s:\n%s", pr.name, pr.waitErr, pr.logPath, pr.logTail(logTailLines))
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy (%s) within %v: %s; log %s:\n%s", pr.name, url, cp.cfg.ReadyTimeout, last, pr.logPath, pr.logTail(logTailLines))
		case <-tick.C:
		}
	}
}

// WaitReady waits until the apiserver's /readyz answers 200 (or ctx ends, or it exits): after
// a restart of the apiserver or of its store.
func (cp *ControlPlane) WaitReady(ctx context.Context) error {
	cp.mu.Lock()
	pr := cp.apiserver
	cp.mu.Unlock()
	return cp.waitHealthy(ctx, pr, cp.server+"/readyz?verbose", true)
}

// Readyz asks the apiserver's /readyz once: whether it answered 200, and otherwise what it
// said (with ?verbose, the failing checks).
func (cp *ControlPlane) Readyz(ctx context.Context) (bool, string) {
	hc := cp.healthClient(true)
	defer hc.CloseIdleConnections()
	return probe(ctx, hc, cp.server+"/readyz?verbose")
}

func (cp *ControlPlane) healthClient(admin bool) *http.Client {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if admin {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(cp.pki.caPEM)
		a := cp.pki.clients["admin"]
		cert, err := tls.X509KeyPair(a.certPEM, a.keyPEM)
		if err == nil {
			tc.Certificates = []tls.Certificate{cert}
		}
		tc.RootCAs = pool
	} else {
		// The controller-manager and scheduler generate their own serving certificate in
		// --cert-dir; only their liveness on loopback is asked here.
		tc.InsecureSkipVerify = true
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DialContext: cp.cfg.Dial}, Timeout: 2 * time.Second}
}

// probe GETs url once: ok on 200, else a short description of what came back.
func probe(ctx context.Context, hc *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	if resp.StatusCode == http.StatusOK {
		return true, strings.TrimSpace(string(body))
	}
	return false, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, failingChecks(string(body)))
}

// failingChecks keeps the "[-]" lines of a verbose health answer, or the whole answer.
func failingChecks(body string) string {
	var bad []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "[-]") {
			bad = append(bad, l)
		}
	}
	if len(bad) == 0 {
		return strings.TrimSpace(body)
	}
	return strings.Join(bad, "; ")
}
