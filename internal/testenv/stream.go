package testenv

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FirstLineWithin GETs url and returns the first line of the response body that starts with
// prefix, failing t if none arrives within d (the response's headers included). It is how a
// test tells a streamed response from a buffered one: the server holds its later lines back
// until the test has seen the first, so a proxy in between that does not flush makes the wait
// run out.
func FirstLineWithin(t testing.TB, url, prefix string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	got := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- "(GET failed: " + err.Error() + ")"
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				got <- sc.Text()
				return
			}
		}
		got <- "(the stream ended without such a line)"
	}()
	select {
	case line := <-got:
		return line
	case <-time.After(d):
		t.Fatalf("GET %s: no line starting %q within %v (is the response flushed as it is written?)", url, prefix, d)
		return ""
	}
}
