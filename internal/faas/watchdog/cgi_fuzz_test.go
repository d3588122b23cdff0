package watchdog

import (
	"net/http/httptest"
	"testing"
)

// FuzzWriteCGI: whatever a function process writes, the watchdog answers with a valid status
// and does not panic.
func FuzzWriteCGI(f *testing.F) {
	for _, s := range []string{
		"Status: 200\r\nContent-Type: text/plain\r\n\r\nhello",
		"Status: 404 Not Found\r\n\r\n",
		"Status: 99\r\n\r\nx",
		"Status: abc\r\n\r\n",
		"no header at all",
		"X-A: 1\r\nX-A: 2\r\n\r\nbody",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		w := httptest.NewRecorder()
		writeCGI(w, out)
		if w.Code < 100 || w.Code > 599 {
			t.Fatalf("status %d for %q", w.Code, out)
		}
	})
}
