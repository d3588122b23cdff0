package http1

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

func TestProxyServiceName(t *testing.T) {
	tests := []struct {
		header  []string
		host    string
		want    string
		wantErr string
	}{
		{nil, "dps", "dps", ""},
		{nil, "dps:8080", "dps", ""},
		{nil, "DPS.Example.com:8080", "dps", ""},
		{nil, "dps.svc.cluster.local", "dps", ""},
		{[]string{"inference"}, "dps.local", "inference", ""}, // the header wins
		{[]string{" Inference "}, "", "inference", ""},
		{[]string{"a", "A"}, "", "a", ""},
		{[]string{"a", "b"}, "", "", "different values"},
		{[]string{""}, "dps", "", "X-Continuum-Service"},
		{[]string{"a b"}, "", "", "want letters"},
		{nil, "", "", "no service named"},
		{nil, "127.0.0.1:8080", "", "no service named"},
		{nil, "[::1]:8080", "", "no service named"},
		{nil, "[::1]", "", "no service named"},
		{nil, ".example.com", "", "first label"},
		{nil, "a_b.local", "a_b", ""},
		{nil, "%zz.local", "", "first label"},
	}
	for _, tt := range tests {
		got, err := ServiceName(tt.header, tt.host)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q %q: err = %v, want %q", tt.header, tt.host, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q %q: got %q, %v; want %q", tt.header, tt.host, got, err, tt.want)
		}
	}
}

// FuzzServiceName: whatever the headers, the result is an error or a valid lower-case name,
// and error messages never echo more than a short prefix of the input.
func FuzzProxyServiceName(f *testing.F) {
	f.Add("", "dps.local:8080")
	f.Add("dps", "")
	f.Add("a\x00b", "[::1]:80")
	f.Add("", "[fe80::1%25eth0]:80")
	f.Add("", ":::")
	f.Fuzz(func(t *testing.T, header, host string) {
		var hs []string
		if header != "" {
			hs = strings.Split(header, "\n")
		}
		name, err := ServiceName(hs, host)
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("error too long (%d bytes): %.100s", len(err.Error()), err)
			}
			return
		}
		if !discovery.ValidServiceName(name) || strings.ToLower(name) != name {
			t.Fatalf("%q %q -> invalid name %q", header, host, name)
		}
	})
}
