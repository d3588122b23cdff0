package netcheck

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// closedAddr is a loopback address where nothing listens (a port just released).
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	up, down := l.Addr().String(), closedAddr(t)
	tests := []struct {
		name      string
		endpoints []string
		wantErr   []string // substrings; none means success
	}{
		{"host:port up", []string{up}, nil},
		{"url up", []string{"http://" + up}, nil},
		{"one of several up", []string{"http://" + down, "http://" + up}, nil},
		{"unix not checked", []string{"unix:///nonexistent.sock"}, nil},
		{"refused", []string{"http://" + down}, []string{"nothing listens at http://" + down, "connection refused", "check the address"}},
		{"all refused", []string{down, "https://" + down}, []string{down + " (connection refused)", "https://" + down + " (connection refused)"}},
		{"none", nil, []string{"no endpoints"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Listening(context.Background(), tt.endpoints, 5*time.Second)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Listening: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Listening: nil error, want one")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestListeningCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Listening(ctx, []string{closedAddr(t)}, time.Second); err != context.Canceled {
		t.Fatalf("Listening with a canceled context: %v, want context.Canceled", err)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"http://10.0.0.2:2379": "10.0.0.2:2379",
		"https://kv":           "kv:443",
		"http://kv":            "kv:80",
		"10.0.0.2:6379":        "10.0.0.2:6379",
		"unix:///tmp/s":        "",
	} {
		if got, err := hostPort(in); err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
