package experiment

import (
	"fmt"
	"testing"
	"time"
)

// Between progress lines the count is extrapolated at the workload's send rate, for a while.
func TestRequestCounterSentBy(t *testing.T) {
	c := newRequestCounter()
	w := c.writer("load")
	fmt.Fprintf(w, `{"type":"progress","t_s":1,"sent":100}`+"\n")
	fmt.Fprintf(w, `{"type":"progress","t_s":2,"sent":200}`+"\n"+`{"type":"progress","t_s":2.5,"sent"`)
	now := time.Now()
	if sent, rate := c.sentBy(now.Add(500 * time.Millisecond)); sent < 249 || sent > 251 || rate != 100 {
		t.Errorf("0.5 s after the line: sent %d rate %v, want ~250 at 100/s", sent, rate)
	}
	if sent, rate := c.sentBy(now.Add(time.Minute)); sent > 351 || rate != 0 {
		t.Errorf("a minute later: sent %d rate %v, want at most 1.5 s of extrapolation and no rate", sent, rate)
	}
	other := c.writer("other")
	fmt.Fprintf(other, `{"type":"done","t_s":3,"sent":40}`+"\n")
	if sent, _ := c.sentBy(time.Now()); sent < 240 || sent > 245 {
		t.Errorf("with a finished workload: sent %d, want 200 + 40 + a little", sent)
	}
}
