package qos

import (
	"reflect"
	"strings"
	"testing"
)

func TestProxyParseRequirement(t *testing.T) {
	tests := []struct {
		in   string
		want Requirement
	}{
		{"accuracy >= 0.95", Requirement{"accuracy", ">=", []string{"0.95"}}},
		{"accuracy>=0.95", Requirement{"accuracy", ">=", []string{"0.95"}}},
		{"  gpu == true ", Requirement{"gpu", "==", []string{"true"}}},
		{"tier in [edge, fog]", Requirement{"tier", "in", []string{"edge", "fog"}}},
		{"tier in[edge]", Requirement{"tier", "in", []string{"edge"}}},
		{`region in ["eu west", 'us,east']`, Requirement{"region", "in", []string{"eu west", "us,east"}}},
		{"topology.kubernetes.io/zone != z1", Requirement{"topology.kubernetes.io/zone", "!=", []string{"z1"}}},
		{"temp > -5", Requirement{"temp", ">", []string{"-5"}}},
		{"cores < 4", Requirement{"cores", "<", []string{"4"}}},
		{"mem <= 1e3", Requirement{"mem", "<=", []string{"1e3"}}},
		{`name == "a b"`, Requirement{"name", "==", []string{"a b"}}},
		{"index == 3", Requirement{"index", "==", []string{"3"}}},
	}
	for _, tt := range tests {
		got, err := ParseRequirement(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestProxyParseRequirementErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "want ATTRIBUTE OP VALUE"},
		{">= 3", "want ATTRIBUTE OP VALUE"},
		{"accuracy", "missing operator"},
		{"accuracy >> 0.9", `unknown operator ">>"; allowed: ==, !=, <=, >=, <, >, in`},
		{"accuracy ~ 0.9", `unknown operator "~"`},
		{"accuracy >=", "missing value"},
		{"accuracy >= high", ">= needs a number"},
		{"tier in edge", "want a list"},
		{"tier in []", "the list is empty"},
		{"tier in [a,,b]", "empty element"},
		{`tier in ["a]`, "in:"},
		{"name == a b", "quote values"},
		{`name == "a`, "unterminated quote"},
		{"tier inx [a]", `unknown operator "inx"`},
		{strings.Repeat("a", 2000) + " == 1", "longer than"},
	}
	for _, tt := range tests {
		_, err := ParseRequirement(tt.in)
		if err == nil {
			t.Errorf("%q: no error", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %q does not contain %q", tt.in, err, tt.want)
		}
	}
}

func TestProxyRequirementMet(t *testing.T) {
	attrs := map[string]string{"accuracy": "0.97", "tier": "edge", "gpu": "True", "cores": "4", "name": "a b"}
	tests := []struct {
		req  string
		want bool
	}{
		{"accuracy >= 0.95", true},
		{"accuracy > 0.97", false},
		{"accuracy == 0.970", true}, // numeric equality
		{"accuracy < 1", true},
		{"cores <= 4", true},
		{"tier in [edge, fog]", true},
		{"tier in [cloud]", false},
		{"tier == edge", true},
		{"tier != edge", false},
		{"tier != cloud", true},
		{"gpu == true", true}, // boolean comparison is case-insensitive
		{"gpu != false", true},
		{"tier >= 1", false},    // not a number
		{"region == eu", false}, // missing attribute fails
		{"region != eu", false}, // ... every operator
		{`name == "a b"`, true},
	}
	for _, tt := range tests {
		r, err := ParseRequirement(tt.req)
		if err != nil {
			t.Fatalf("%q: %v", tt.req, err)
		}
		got, why := r.Met(attrs)
		if got != tt.want {
			t.Errorf("%q: met = %v (%s), want %v", tt.req, got, why, tt.want)
		}
		if !got && why == "" {
			t.Errorf("%q: unmet without a reason", tt.req)
		}
	}
}

// FuzzParseRequirement: the parser never panics, and what it accepts prints back to the same
// requirement.
func FuzzProxyParseRequirement(f *testing.F) {
	for _, s := range []string{"accuracy >= 0.95", "tier in [edge, fog]", "gpu == true", `a in ["x y", 'z']`,
		"a != b", "a<1", `a == "`, "in in [in]", "a in [,]", "x == 'a\"b'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRequirement(s)
		if err != nil {
			return
		}
		if r.Attr == "" || len(r.Values) == 0 {
			t.Fatalf("%q parsed to an incomplete %#v", s, r)
		}
		again, err := ParseRequirement(r.String())
		if err != nil {
			t.Fatalf("%q -> %q does not parse: %v", s, r.String(), err)
		}
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("%q -> %#v -> %q -> %#v", s, r, r.String(), again)
		}
		r.Met(map[string]string{r.Attr: r.Values[0]})
	})
}
