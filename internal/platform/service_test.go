package platform

import (
	"strings"
	"testing"
)

func TestServiceValidate(t *testing.T) {
	tests := []struct {
		s    Service
		want string // substring of the error, "" for valid
	}{
		{Service{Name: "dps", Port: 8080}, ""},
		{Service{Name: "a-1", Port: 1, Attributes: map[string]string{"tier": "edge"}}, ""},
		{Service{Name: "", Port: 80}, "DNS label"},
		{Service{Name: "Dps", Port: 80}, "DNS label"},
		{Service{Name: "dps.x", Port: 80}, "DNS label"},
		{Service{Name: "-dps", Port: 80}, "DNS label"},
		{Service{Name: "dps", Port: 0}, "port 0"},
		{Service{Name: "dps", Port: 70000}, "port 70000"},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.s, err, tt.want)
		}
	}
}

// publishLoad turns a sampler round's node rows into fractions of each node's limits.
