package platform

import (
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in   string
		want Endpoint
		err  bool
	}{
		{"testbed:run1-001@/run/continuum", Endpoint{"testbed", "run1-001@/run/continuum"}, false},
		{"kubernetes:ns/run1", Endpoint{"kubernetes", "ns/run1"}, false},
		{"testbed:", Endpoint{}, true},
		{"run1", Endpoint{}, true},
		{":x", Endpoint{}, true},
		{"Test bed:x", Endpoint{}, true},
	}
	for _, tt := range tests {
		got, err := ParseEndpoint(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v", tt.in, got, err)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
		if err != nil && !strings.Contains(err.Error(), "<platform>:<address>") {
			t.Errorf("error %q does not say the form", err)
		}
	}
}
