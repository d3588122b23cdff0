package promtext

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const page = `# TYPE go_memstats_mallocs_total counter
go_memstats_mallocs_total 1234
# TYPE grpc_server_handled_total counter
grpc_server_handled_total{grpc_code="OK"} 10
grpc_server_handled_total{grpc_code="Unavailable"} 2
# TYPE up gauge
up 1
# TYPE lat histogram
lat_bucket{le="1"} 3
lat_bucket{le="+Inf"} 4
lat_sum 2.5
lat_count 4
`

func TestParseSumsLabelSets(t *testing.T) {
	m, err := Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"go_memstats_mallocs_total": 1234, "grpc_server_handled_total": 12, "up": 1}
	if len(m) != len(want) {
		t.Errorf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if _, err := Parse(strings.NewReader("not metrics {")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	m, err := Scrape(context.Background(), srv.URL+"/metrics")
	if err != nil || m["up"] != 1 {
		t.Errorf("Scrape = %v, %v", m, err)
	}
	if _, err := Scrape(context.Background(), srv.URL+"/nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: %v, want an error naming it", err)
	}
}
