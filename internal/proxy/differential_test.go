package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/testenv"
)

// The proxy's differential harness. Generated clients send requests — valid, borderline and
// hostile in their framing — through a proxy to a scripted instance whose answers misbehave
// in generated ways (bytes past the framing, a body on HEAD, 204 or 304, 1xx interim answers,
// no length, an early close, a reset, a slow answer, a head over 4 KiB). Every exchange is
// tagged: the instance puts the request's tag in its answer, and what it sends where no
// answer is due carries a LEAK marker. The invariant, for continuum-proxy: every client gets
// its own answer or an error, never another exchange's bytes. Several clients run at once on
// keep-alive connections, so that pooled instance connections pass from one client to
// another. The same cases run through net/http's httputil.ReverseProxy and, where
// /usr/sbin/haproxy is installed, HAProxy: the references' outcomes are logged beside the
// proxy's, and the proxy must serve (own answer) every well-formed request to a well-behaved
// instance that net/http's ReverseProxy serves.
//
// TestProxyDifferential runs a fixed set of seeds in `make test`; FuzzProxyDifferential lets the
// fuzzer choose the cases (go test -fuzz FuzzProxyDifferential ./internal/proxy/).

// behaviours of the scripted instance, chosen per request (the path's last element).
var diffBehaviours = []string{
	"ok", "chunked", "slow", "interim", "bighead", "notmodified", // well-behaved
	"extra", "extra-split", "headbody", "204body", "304body", "nolength", "earlyclose", "partial", "reset", // misbehaving
}

func wellBehaved(b string) bool {
	switch b {
	case "ok", "chunked", "slow", "interim", "bighead", "notmodified":
		return true
	}
	return false
}

// diffInstance answers each request as its path says: /t/TAG/BEHAVIOUR.
func diffInstance(t testing.TB) *rawInstance {
	return startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/t/"), "/")
		if len(parts) != 2 {
			io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			return
		}
		tag, beh := parts[0], parts[1]
		body := "tag=" + tag + ";"
		leak := "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len("LEAK-"+tag)) + "\r\n\r\nLEAK-" + tag
		okAnswer := func() string {
			if r.Method == http.MethodHead {
				return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
			}
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
		switch beh {
		case "ok":
			io.WriteString(c, okAnswer())
		case "chunked":
			if r.Method == http.MethodHead {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		case "slow":
			time.Sleep(time.Duration(5+n%20) * time.Millisecond)
			io.WriteString(c, okAnswer())
		case "interim":
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"+okAnswer())
		case "bighead":
			big := "X-Big: " + strings.Repeat("h", 5<<10) + "\r\n"
			if r.Method == http.MethodHead {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n", big, len(body))
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", big, len(body), body)
		case "notmodified":
			io.WriteString(c, "HTTP/1.1 304 Not Modified\r\nETag: \""+tag+"\"\r\n\r\n")
		case "extra":
			io.WriteString(c, okAnswer()+leak) // one write: the extra bytes come with the answer
		case "extra-split":
			// The answer's last byte and the extra bytes in one later write: the proxy reads the
			// answer exactly, and the extra bytes wait in the socket, not in its buffer.
			a := okAnswer()
			io.WriteString(c, a[:len(a)-1])
			time.Sleep(time.Millisecond)
			io.WriteString(c, a[len(a)-1:]+leak)
		case "headbody":
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body) // a body even to HEAD
			if r.Method == http.MethodHead {
				io.WriteString(c, leak)
			}
		case "204body":
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"+leak)
		case "304body":
			fmt.Fprintf(c, "HTTP/1.1 304 Not Modified\r\nContent-Length: %d\r\n\r\n%s", len(leak), leak)
		case "nolength":
			if r.Method != http.MethodHead {
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n"+body)
			} else {
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
			}
			c.Close()
		case "earlyclose":
			c.Close()
		case "partial":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+body)
			c.Close()
		case "reset":
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	})
}

// chooser draws the harness's choices from the fuzzer's bytes, then from a seeded generator.
type chooser struct {
	b []byte
	r *rand.Rand
}

func newChooser(data []byte) *chooser {
	var seed [16]byte
	copy(seed[:], data)
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	if len(data) > 16 {
		data = data[16:]
	} else {
		data = nil
	}
	return &chooser{b: data, r: r}
}

func (c *chooser) intn(n int) int {
	if len(c.b) > 0 {
		v := int(c.b[0]) % n
		c.b = c.b[1:]
		return v
	}
	return c.r.IntN(n)
}

// diffExchange is one generated request: its raw bytes, the method (to read the answer by),
// the tags of the answers it expects in order (pipelined requests expect two), whether it is
// well-formed, and the instance's behaviour.
type diffExchange struct {
	raw        string
	method     string
	tags       []string
	wellFormed bool
	behaviour  string
}

// genExchange makes the exchange tagged tag.
func genExchange(ch *chooser, tag string) diffExchange {
	beh := diffBehaviours[ch.intn(len(diffBehaviours))]
	path := "/t/" + tag + "/" + beh
	methods := []string{"GET", "GET", "HEAD", "POST", "PUT", "DELETE"}
	m := methods[ch.intn(len(methods))]
	body := "body-of-" + tag
	x := diffExchange{method: m, tags: []string{tag}, wellFormed: true, behaviour: beh}
	switch kind := ch.intn(14); kind {
	case 0, 1, 2: // plain, keep-alive
		if m == "POST" || m == "PUT" {
			x.raw = fmt.Sprintf("%s %s HTTP/1.1\r\nHost: dps\r\nContent-Length: %d\r\n\r\n%s", m, path, len(body), body)
		} else {
			x.raw = fmt.Sprintf("%s %s HTTP/1.1\r\nHost: dps\r\n\r\n", m, path)
		}
	case 3: // chunked body
		x.method = "POST"
		x.raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", path, len(body), body)
	case 4: // Expect: 100-continue, body sent at once
		x.method = "PUT"
		x.raw = fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: dps\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	case 5: // HTTP/1.0 keep-alive
		x.raw = fmt.Sprintf("%s %s HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\n\r\n", m, path)
		if m == "POST" || m == "PUT" {
			x.raw = fmt.Sprintf("%s %s HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\nContent-Length: %d\r\n\r\n%s", m, path, len(body), body)
		}
	case 6: // a head over the loop's buffer: net/http's server
		x.raw = fmt.Sprintf("%s %s HTTP/1.1\r\nHost: dps\r\nX-Pad: %s\r\n\r\n", m, path, strings.Repeat("p", 5<<10))
		if m == "POST" || m == "PUT" {
			x.raw = fmt.Sprintf("%s %s HTTP/1.1\r\nHost: dps\r\nX-Pad: %s\r\nContent-Length: %d\r\n\r\n%s", m, path, strings.Repeat("p", 5<<10), len(body), body)
		}
	case 7: // absolute form
		x.raw = fmt.Sprintf("%s http://dps%s HTTP/1.1\r\nHost: dps\r\n\r\n", m, path)
	case 8: // pipelined: two requests in one write
		tag2 := tag + "p"
		beh2 := diffBehaviours[ch.intn(len(diffBehaviours))]
		x.method = "GET"
		x.raw = fmt.Sprintf("GET %s HTTP/1.1\r\nHost: dps\r\n\r\nGET /t/%s/%s HTTP/1.1\r\nHost: dps\r\n\r\n", "/t/"+tag+"/"+beh, tag2, beh2)
		x.tags = append(x.tags, tag2)
		x.behaviour = beh + "+" + beh2
	default: // hostile framing
		x.wellFormed = false
		x.method = "POST"
		smuggled := fmt.Sprintf("GET /t/%ss/ok HTTP/1.1\r\nHost: dps\r\n\r\n", tag)
		switch ch.intn(7) {
		case 0: // CL.TE
			inner := "0\r\n\r\n" + smuggled
			x.raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: dps\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s", path, len(inner), inner)
		case 1: // TE.CL
			x.raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", path, len(smuggled), smuggled)
		case 2: // Transfer-Encoding in HTTP/1.0
			x.raw = fmt.Sprintf("POST %s HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n%s", path, smuggled)
		case 3: // two differing lengths
			x.raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: dps\r\nContent-Length: 4\r\nContent-Length: %d\r\n\r\nbody%s", path, 4+len(smuggled), smuggled)
		case 4: // bare LF line ends
			x.raw = fmt.Sprintf("POST %s HTTP/1.1\nHost: dps\nContent-Length: 4\n\nbody", path)
		case 5: // a coding other than chunked
			x.raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n%s", path, smuggled)
		case 6: // a bad chunk size
			x.raw = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbody\r\n0\r\n\r\n", path)
		}
	}
	return x
}

var discardLog = log.New(io.Discard, "", 0)

var tagRe = regexp.MustCompile(`tag=([0-9a-z]+);|LEAK-([0-9a-z]+)`)

// diffTally counts one target's outcomes.
type diffTally struct {
	name     string
	took     time.Duration
	mu       sync.Mutex
	own      int      // the exchange's own answer
	errors   int      // an error status or a broken connection: allowed
	foreign  []string // another exchange's bytes: the invariant broken
	ownByKey map[string]bool
	// plain: the tags of well-formed requests to well-behaved instance answers.
	plain map[string]string
}

// diffRounds: the exchanges of a seed run in rounds; between two, when every connection is
// idle, the instance writes an answer nobody asked for on each of its idle connections
// (rawInstance.poisonIdle), which a proxy must notice before it reuses the connection.
const diffRounds = 3

// diffClient is one generated client: its stream of cases and its keep-alive connection.
type diffClient struct {
	id int
	ch *chooser
	n  int // exchanges so far
	c  net.Conn
	br *bufio.Reader
}

// runDiff sends the cases of seed through target from clients concurrent clients, each doing
// perClient exchanges on keep-alive connections (a new one after a close), in diffRounds rounds.
func runDiff(t testing.TB, target diffTarget, name string, seed []byte, clients, perClient int) *diffTally {
	tally := &diffTally{name: name, ownByKey: map[string]bool{}, plain: map[string]string{}}
	cls := make([]*diffClient, clients)
	for ci := range cls {
		// Every client draws the same cases whatever the target: its chooser is seeded by the
		// case's bytes and its own index.
		data := make([]byte, max(16, len(seed)))
		copy(data, seed)
		data[15] ^= byte(ci) + 1 // the client's own stream of cases
		cls[ci] = &diffClient{id: ci, ch: newChooser(data)}
	}
	defer func() {
		for _, cl := range cls {
			if cl.c != nil {
				cl.c.Close()
			}
		}
	}()
	for round := range diffRounds {
		if round > 0 {
			target.inst.poisonIdle(t)
		}
		var wg sync.WaitGroup
		for _, cl := range cls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perClient / diffRounds {
					x := genExchange(cl.ch, fmt.Sprintf("c%de%d", cl.id, cl.n))
					cl.n++
					if cl.c == nil {
						var err error
						if cl.c, err = net.DialTimeout("tcp", target.addr, 5*time.Second); err != nil {
							t.Errorf("%s: dial: %v", name, err)
							return
						}
						cl.br = bufio.NewReader(cl.c)
					}
					cl.c.SetDeadline(time.Now().Add(10 * time.Second))
					if !tally.exchange(cl.c, cl.br, x) {
						cl.c.Close()
						cl.c = nil
					}
				}
			}()
		}
		wg.Wait()
	}
	return tally
}

// exchange sends x on c and checks its answers; it reports whether c can carry another.
func (tl *diffTally) exchange(c net.Conn, br *bufio.Reader, x diffExchange) bool {
	if _, err := io.WriteString(c, x.raw); err != nil {
		tl.add(x, "", false, "")
		return false
	}
	for i, tag := range x.tags {
		method := x.method
		if i > 0 {
			method = http.MethodGet
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		for err == nil && resp.StatusCode < 200 {
			// Interim answers (100 Continue, 103 Early Hints) come before the answer.
			resp, err = http.ReadResponse(br, &http.Request{Method: method})
		}
		if err != nil {
			tl.add(x, tag, false, "")
			return false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		foreign := ""
		own := false
		for _, m := range tagRe.FindAllStringSubmatch(string(b), -1) {
			switch {
			case m[2] != "":
				foreign = "LEAK-" + m[2] // bytes an instance sent where no answer was due
			case m[1] == tag:
				own = true
			default:
				foreign = "tag=" + m[1]
			}
		}
		if err != nil {
			// A body that broke off: allowed, unless what came of it was another's.
			tl.add(x, tag, false, foreign)
			return false
		}
		ok := resp.StatusCode < 300 && (own || method == http.MethodHead || resp.StatusCode == http.StatusNoContent)
		if resp.StatusCode == http.StatusNotModified {
			ok = true
		}
		tl.add(x, tag, ok, foreign)
		if resp.Close || !x.wellFormed {
			return false
		}
	}
	return true
}

func (tl *diffTally) add(x diffExchange, tag string, own bool, foreign string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if x.wellFormed && wellBehaved(x.behaviour) && tag != "" {
		tl.plain[tag] = fmt.Sprintf("%s, %q", x.behaviour, firstLine(x.raw))
	}
	switch {
	case foreign != "":
		tl.foreign = append(tl.foreign, fmt.Sprintf("exchange %s (%s, %q...) got %s", tag, x.behaviour, firstLine(x.raw), foreign))
	case own:
		tl.own++
		tl.ownByKey[tag] = true
	default:
		tl.errors++
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// diffTargets starts an instance per target and the targets in front of them: continuum-proxy,
// net/http's ReverseProxy and, where installed, HAProxy (as a separate process, stopped when
// the test ends).
type diffTarget struct {
	addr string
	inst *rawInstance
}

func diffTargets(t testing.TB) map[string]diffTarget {
	targets := map[string]diffTarget{}
	inst1 := diffInstance(t)
	cfg := testConfig(newTestSource(inst("a", "dps", inst1.url)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.Defaults.Timeout = config.Dur(3 * time.Second)
	cfg.Defaults.Retries = 0
	targets["continuum"] = diffTarget{strings.TrimPrefix(startProxy(t, cfg).url, "http://"), inst1}

	inst2 := diffInstance(t)
	u, _ := url.Parse(inst2.url)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = discardLog
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 3 * time.Second}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	srv := httptest.NewUnstartedServer(rp)
	srv.Config.ErrorLog = discardLog
	srv.Start()
	t.Cleanup(srv.Close)
	targets["net/http"] = diffTarget{strings.TrimPrefix(srv.URL, "http://"), inst2}

	inst3 := diffInstance(t)
	if addr, ok := startHAProxy(t, strings.TrimPrefix(inst3.url, "http://")); ok {
		targets["haproxy"] = diffTarget{addr, inst3}
	}
	return targets
}

// startHAProxy runs HAProxy in front of instance (with http-reuse always, so that its
// connections pass between clients as the proxy's do); false when it is not installed.
func startHAProxy(t testing.TB, instance string) (string, bool) {
	const bin = "/usr/sbin/haproxy"
	if _, err := os.Stat(bin); err != nil {
		t.Logf("HAProxy reference skipped: %s not installed", bin)
		return "", false
	}
	addr := testenv.FreeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	cfg := fmt.Sprintf(`global
  maxconn 512
defaults
  mode http
  timeout connect 2s
  timeout client 10s
  timeout server 3s
  http-reuse always
frontend fe
  bind %s
  default_backend be
backend be
  server s1 %s
`, addr, instance)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-f", cfgPath, "-db")
	if err := cmd.Start(); err != nil {
		t.Logf("HAProxy reference skipped: %v", err)
		return "", false
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	up := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			up = true
			break
		}
	}
	if !up {
		t.Logf("HAProxy reference skipped: it did not listen on %s", addr)
		return "", false
	}
	return addr, true
}

// checkDiff runs one seed through every target and checks the invariant, and that the proxy
// serves what net/http's ReverseProxy serves of well-formed requests to well-behaved instances.
func checkDiff(t testing.TB, targets map[string]diffTarget, seed []byte, clients, perClient int) {
	tallies := map[string]*diffTally{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, target := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			tl := runDiff(t, target, name, seed, clients, perClient)
			tl.took = time.Since(start)
			mu.Lock()
			tallies[name] = tl
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, tl := range tallies {
		if len(tl.foreign) > 0 {
			msg := fmt.Sprintf("%s: %d exchange(s) got another exchange's bytes:\n  %s", name, len(tl.foreign), strings.Join(tl.foreign[:min(len(tl.foreign), 10)], "\n  "))
			if name == "continuum" {
				t.Error(msg)
			} else {
				t.Log("reference " + msg)
			}
		}
	}
	if ref, ok := tallies["net/http"]; ok {
		var missed []string
		for tag, what := range ref.plain {
			if ref.ownByKey[tag] && !tallies["continuum"].ownByKey[tag] {
				missed = append(missed, tag+" ("+what+")")
			}
		}
		if len(missed) > 0 {
			t.Errorf("continuum failed %d well-formed request(s) to a well-behaved instance that net/http's ReverseProxy served: %s", len(missed), strings.Join(missed[:min(len(missed), 10)], "; "))
		}
	}
	t.Logf("seed %x: own answers / errors: %s", seed, func() string {
		var parts []string
		for name, tl := range tallies {
			parts = append(parts, fmt.Sprintf("%s %d/%d in %v", name, tl.own, tl.errors, tl.took.Round(time.Millisecond)))
		}
		return strings.Join(parts, ", ")
	}())
}

// diffSeeds are the cases `make test` runs: a fixed budget.
var diffSeeds = [][]byte{
	[]byte("continuum-proxy-differential-01"),
	[]byte("continuum-proxy-differential-02"),
	[]byte("continuum-proxy-differential-03"),
	[]byte("continuum-proxy-differential-04"),
	[]byte("continuum-proxy-differential-05"),
	[]byte("continuum-proxy-differential-06"),
}

// TestProxyDifferential: the harness over diffSeeds (6 seeds x 4 clients x 30 exchanges per
// target), against fresh targets.
func TestProxyDifferential(t *testing.T) {
	targets := diffTargets(t)
	for _, seed := range diffSeeds {
		checkDiff(t, targets, seed, 4, 30)
	}
}

// FuzzProxyDifferential: the fuzzer's bytes choose the cases (go test -fuzz
// FuzzProxyDifferential -fuzztime 10m ./internal/proxy/). The targets are started once.
func FuzzProxyDifferential(f *testing.F) {
	for _, s := range diffSeeds {
		f.Add(s)
	}
	targets := diffTargets(f)
	f.Fuzz(func(t *testing.T, seed []byte) {
		checkDiff(t, targets, seed, 3, 12)
	})
}
