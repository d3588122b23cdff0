package netbench

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseIperf(t *testing.T) {
	b, err := os.ReadFile("testdata/iperf3-tcp-p2.json") // iperf 3.12, -P 2 over loopback
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseIperf(b)
	if err != nil {
		t.Fatal(err)
	}
	want := IperfResult{Streams: 2, Seconds: 1.000432, BytesReceived: 3168010240, GoodputBps: 25333138004.382107,
		SenderBps: 25333720428.3448, Retransmits: 10, Congestion: "bbr", MSS: 32768, HostCPU: 96.49729574297926, RemoteCPU: 45.517063526175534}
	if *r != want {
		t.Errorf("ParseIperf =\n%+v, want\n%+v", *r, want)
	}
	if g := r.Gbps(); g < 25.33 || g > 25.34 {
		t.Errorf("Gbps = %v", g)
	}
}

func TestParseIperfErrors(t *testing.T) {
	refused, err := os.ReadFile("testdata/iperf3-refused.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseIperf(refused); !errors.Is(err, errIperfConnect) || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("a refused connection: %v, want errIperfConnect with iperf3's message", err)
	}
	for _, c := range []struct{ name, in, want string }{
		{"not JSON", "iperf3: error - unable to send", "not JSON"},
		{"iperf3's own error", `{"start":{},"end":{},"error":"the server is busy running a test. try again later"}`, "iperf3: the server is busy"},
		{"a UDP test", `{"start":{"test_start":{"protocol":"UDP","num_streams":1}},"end":{"sum":{}}}`, `"UDP" test, want TCP`},
		{"no summary", `{"start":{"test_start":{"protocol":"TCP","num_streams":1}},"end":{}}`, "no end.sum_received"},
		{"zero duration", `{"start":{"test_start":{"protocol":"TCP"}},"end":{"sum_sent":{},"sum_received":{"seconds":0}}}`, "receiver's duration 0"},
	} {
		_, err := ParseIperf([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, errIperfConnect) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// FuzzParseIperf: whatever iperf3 (or a truncated pipe) prints, parsing returns a result or an
// error, never panics, and a result has a positive duration.
func FuzzParseIperf(f *testing.F) {
	for _, name := range []string{"testdata/iperf3-tcp-p2.json", "testdata/iperf3-refused.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseIperf(b)
		if err == nil && !(r.Seconds > 0) {
			t.Errorf("result with duration %v", r.Seconds)
		}
	})
}
