package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParseBody(t *testing.T) {
	for _, c := range []struct {
		body string
		keys []string
		err  string
	}{
		{body: `{"id":"a","v":1}`, keys: []string{"a"}},
		{body: ` {"v":{"id":"inner"},"id":42} `, keys: []string{"42"}},
		{body: `[{"id":"a"},{"x":[1,{"id":2}],"id":-1.5e3}]`, keys: []string{"a", "-1.5e3"}},
		{body: `{"i\u0064":"esc","s":"a\"b}"}`, keys: []string{"esc"}},
		{body: `{"s":"}\"{","id":"x\ny"}`, keys: []string{"x\ny"}},
		{body: ``, err: "empty body"},
		{body: `[]`, err: "empty array"},
		{body: `{"id":"a"`, err: "not JSON"},
		{body: `[{"id":"a"},]`, err: "not a JSON array"},
		{body: `"str"`, err: "not a JSON object"},
		{body: `[{"id":"a"},3]`, err: "element 1: not a JSON object"},
		{body: `{"v":1}`, err: `no "id" field`},
		{body: `{"id":null}`, err: `"id" is null`},
		{body: `{"id":{"a":1}}`, err: `"id" is an object`},
		{body: `{"id":true}`, err: `"id" is a boolean`},
		{body: `{"id":""}`, err: "empty string"},
		{body: `{"id":"a"} {"id":"b"}`, err: "not JSON"},
		// Issue 41, defect 21: Kafka would be keyed by one value and the database written at
		// the other (encoding/json keeps the last).
		{body: `{"id":"a","id":"b"}`, err: `field "id" appears 2 times`},
		{body: `[{"id":1},{"id":"a","v":{"id":2},"i\u0064":"b"}]`, err: `element 1: field "id" appears 2 times`},
	} {
		es, err := parseBody([]byte(c.body), "id")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.body, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		var keys []string
		for _, e := range es {
			keys = append(keys, string(e.key))
		}
		if strings.Join(keys, "|") != strings.Join(c.keys, "|") {
			t.Errorf("%s: keys %q, want %q", c.body, keys, c.keys)
		}
	}
}

// The value of each record is the object's bytes as posted.
func TestParseBodyKeepsBytes(t *testing.T) {
	obj := `{ "id" : "a",  "n": 1.0, "s":"\u00e9" }`
	es, err := parseBody([]byte("[ "+obj+" ,\n"+obj+"]"), "id")
	if err != nil || len(es) != 2 || string(es[0].value) != obj || string(es[1].value) != obj {
		t.Fatalf("entries %q, err %v", es, err)
	}
}

func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`{"id":"a"}`, `[{"id":1},{"id":"b","x":[{}]}]`, `{"a":"\"","id":2}`, `[`, `{"id":"a\\"}`, `{"id":"a","id":"b"}`, `{"i\\u0064":"a","id":"a"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		es, err := parseBody([]byte(body), "id")
		if err != nil {
			return
		}
		for _, e := range es {
			if len(e.key) == 0 || len(e.value) == 0 || e.value[0] != '{' {
				t.Fatalf("body %q: entry key %q value %q", body, e.key, e.value)
			}
			// The key is the id a JSON decoder (the aggregator's) reads: one record, one id.
			d := json.NewDecoder(bytes.NewReader(e.value))
			d.UseNumber()
			var obj map[string]any
			if err := d.Decode(&obj); err != nil {
				t.Fatalf("body %q: entry %q does not decode: %v", body, e.value, err)
			}
			if id := fmt.Sprint(obj["id"]); id != string(e.key) {
				t.Fatalf("body %q: keyed %q, but a JSON decoder reads id %q", body, e.key, id)
			}
		}
	})
}
