package gateway

import (
	"strings"
	"testing"
)

// A value of the wrong form gets what the key wants, not strconv's or time's wording.
func TestParseFunctionValueErrors(t *testing.T) {
	for in, want := range map[string]string{
		"name=f,idle_timeout=30":   `idle_timeout: "30": want a duration with a unit, e.g. 30s or 500ms (30s for seconds)`,
		"name=f,rps_window=soon":   `rps_window: "soon": want a duration with a unit`,
		"name=f,max=x":             `max: "x": want a whole number`,
		"name=f,cpu_threshold=lot": `cpu_threshold: "lot": want a number`,
		"name=f,zygote=yes":        `zygote: "yes": want true or false`,
	} {
		_, err := ParseFunction(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "missing unit") {
			t.Errorf("%s: Go's wording leaks: %v", in, err)
		}
	}
}
