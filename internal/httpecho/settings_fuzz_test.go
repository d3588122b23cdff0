package httpecho

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzAdminConfig feeds arbitrary PUT /admin/config bodies: never a panic, an accepted body
// always yields valid settings, a rejected one leaves them unchanged, and the settings' own
// JSON (what GET returns) is accepted back unchanged.
func FuzzAdminConfig(f *testing.F) {
	for _, s := range []string{
		`{"delay":"20ms","cpu_work":"0s","response_size":0}`, `{"delay":"1.5s"}`, `{"response_size":1024}`,
		`{}`, `{"x":1}`, `{"delay":20}`, `null`, `[]`, `{"delay":"-1s"}`, `{"response_size":1e3}`,
		`{"delay":"20ms"}{}`, `{"cpu_work":"9223372036854775807ns"}`,
	} {
		f.Add([]byte(s))
	}
	cur := Settings{Delay: 7 * time.Millisecond, CPUWork: time.Millisecond, ResponseSize: 3}
	f.Fuzz(func(t *testing.T, body []byte) {
		next, err := applyJSON(cur, body)
		if err != nil {
			if next != cur {
				t.Fatalf("rejected body %q changed settings to %+v", body, next)
			}
			return
		}
		if verr := next.Validate(); verr != nil {
			t.Fatalf("accepted body %q gave invalid settings: %v", body, verr)
		}
		b, err := json.Marshal(next)
		if err != nil {
			t.Fatal(err)
		}
		again, err := applyJSON(Settings{}, b)
		if err != nil || again != next {
			t.Fatalf("round trip of %s: %+v, %v", b, again, err)
		}
	})
}
