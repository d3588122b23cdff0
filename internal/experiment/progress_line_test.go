package experiment

import "testing"

func TestRequestsLine(t *testing.T) {
	for _, tc := range []struct {
		sent, failed int64
		want         string
	}{
		{1200, 0, "20 req/s  sent 1200, none failed"},
		{1200, 503, "20 req/s  sent 1200, 503 failed (41.9%)"},
		{0, 3, "20 req/s  sent 0, 3 failed (100.0%)"},
	} {
		if got := requestsLine(20, tc.sent, tc.failed); got != tc.want {
			t.Errorf("requestsLine(%d, %d) = %q, want %q", tc.sent, tc.failed, got, tc.want)
		}
	}
}
