package agent

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

func TestParseForward(t *testing.T) {
	for _, tc := range []struct{ in, listen, target, err string }{
		{in: "8080=10.0.0.7:8080", listen: ":8080", target: "10.0.0.7:8080"},
		{in: "80=[fd00::1]:8000", listen: ":80", target: "[fd00::1]:8000"},
		{in: "8080", err: "want PORT=HOST:PORT"},
		{in: "0=10.0.0.7:1", err: "want PORT=HOST:PORT"},
		{in: "x=10.0.0.7:1", err: "want PORT=HOST:PORT"},
		{in: "8080=10.0.0.7", err: "the target is HOST:PORT"},
	} {
		l, tg, err := ParseForward(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseForward(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || l != tc.listen || tg != tc.target {
			t.Errorf("ParseForward(%q) = %q, %q, %v", tc.in, l, tg, err)
		}
	}
}

// TestForwardRelays: bytes both ways, the client's half-close reaches the server (which answers
// after it), and Forward returns once ctx ends, closing what it relays.
func TestForwardRelays(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the client's half-close
				_, _ = c.Write([]byte(strings.ToUpper(string(b))))
			}()
		}
	}()
	port := testenv.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Forward(ctx, []string{strconv.Itoa(port) + "=" + srv.Addr().String()}) }()
	var c net.Conn
	testenv.EventuallyNoError(t, 30*time.Second, "the forward listens", func() error {
		var err error
		c, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		return err
	})
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "HELLO" {
		t.Fatalf("through the forward: %q, %v", b, err)
	}
	c.Close()
	held, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Forward did not return after its context ended")
	}
	_ = held.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Error("a relayed connection stayed open after Forward returned")
	}
	if _, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Error("the forward still listens after Forward returned")
	}
	if err := Forward(context.Background(), []string{"bad"}); err == nil {
		t.Error("Forward of a malformed forward: no error")
	}
}
