package bridge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/testenv"
)

func startBridge(t *testing.T, edit func(*bridge.Config)) string {
	t.Helper()
	cfg := bridge.DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	b, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(b)
	t.Cleanup(func() { s.Close(); b.Close() })
	return s.URL
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// deadAddr is a loopback address where nothing listens (and no other test is given).
func deadAddr(t *testing.T) string { return testenv.FreeAddr(t) }

// Bad input is refused before Kafka is asked, so it needs no broker.
func TestBadInput(t *testing.T) {
	url := startBridge(t, func(c *bridge.Config) { c.Brokers = []string{deadAddr(t)}; c.MaxBodyBytes = 1000 })
	for _, c := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/topics/t", `not json`, 400, "not JSON"},
		{"/topics/t", `{"v":1}`, 400, `no "id" field`},
		{"/topics/t", `[{"id":1},{"id":[1]}]`, 400, `element 1: field "id" is an array`},
		{"/topics/t", `"x"`, 400, "not a JSON object"},
		{"/topics/t", `{"id":"a","id":"b"}`, 400, `field "id" appears 2 times`},
		{"/topics/b%20d", `{"id":1}`, 400, "want 1-249 of [a-zA-Z0-9._-]"},
		{"/topics/t", `{"id":"` + strings.Repeat("x", 1000) + `"}`, 413, "over 1000 bytes"},
		{"/nope", `{}`, 404, "POST /topics/<topic>"},
	} {
		code, body := post(t, url+c.path, c.body)
		var e struct{ Error string }
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, c.want) {
			t.Errorf("POST %s %.40q: %d %s, want %d with %q", c.path, c.body, code, body, c.code, c.want)
		}
	}
	resp, err := http.Get(url + "/topics/t")
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /topics/t: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := bridge.New(bridge.Config{}); err == nil || !strings.Contains(err.Error(), "brokers") {
		t.Errorf("an empty config: %v", err)
	}
}

// With no broker, a post is answered 503 (at the latest at the ack timeout; at once when the
// dial was refused), and so is the next one.
func TestKafkaDown(t *testing.T) {
	url := startBridge(t, func(c *bridge.Config) { c.Brokers = []string{deadAddr(t)}; c.AckTimeout = time.Second })
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, body := post(t, url+"/topics/t", `{"id":"a"}`)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "retry it") {
			t.Errorf("with kafka down: %d %s, want 503", code, body)
		}
		code, body = post(t, url+"/topics/t", `{"id":"b"}`)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "kafka unavailable") {
			t.Errorf("the next post: %d %s, want 503 kafka unavailable", code, body)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a bound on a hang, not a latency figure
		t.Fatal("posts with kafka down did not answer within a minute")
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("healthz with kafka down: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestProduce(t *testing.T) {
	k := kafka.Broker(t, baselines.KafkaTopic{Name: "in", Partitions: 3, Replication: 1})
	url := startBridge(t, func(c *bridge.Config) { c.Brokers = k.Target.Endpoints })
	objs := []string{`{"id":"s1","temp":21.5}`, `{ "id" : 7, "n":1.0 }`, `{"id":"s1","temp":22}`}
	code, body := post(t, url+"/topics/in", "["+strings.Join(objs, ",")+"]")
	var rep struct{ Offsets []bridge.Offset }
	if code != 200 || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Offsets) != 3 {
		t.Fatalf("post: %d %s", code, body)
	}
	if rep.Offsets[0].Partition != rep.Offsets[2].Partition || rep.Offsets[2].Offset <= rep.Offsets[0].Offset {
		t.Errorf("offsets %+v: one id, one partition, in order", rep.Offsets)
	}
	code, body = post(t, url+"/topics/in", objs[0])
	if code != 200 {
		t.Fatalf("single object: %d %s", code, body)
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Target.Endpoints...), kgo.ConsumeTopics("in"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]string{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; n < 4 && ctx.Err() == nil; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = append(got[string(r.Key)], string(r.Value))
			n++
		})
	}
	if strings.Join(got["s1"], "|") != objs[0]+"|"+objs[2]+"|"+objs[0] || strings.Join(got["7"], "") != objs[1] {
		t.Errorf("records by key %q", got)
	}

	code, body = post(t, url+"/topics/missing", `{"id":1}`)
	if code != 404 || !strings.Contains(body, "does not exist") {
		t.Errorf("a missing topic: %d %s", code, body)
	}
}
