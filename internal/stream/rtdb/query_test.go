package rtdb

import (
	"strings"
	"testing"
)

func TestQueries(t *testing.T) {
	base := startRTDB(t, nil)
	do(t, "PUT", base+"/d.json", `{"b":{"h":3,"n":"x"},"a":{"h":10},"10":{"h":1},"9":{"h":"s"},"c":{"h":true},"e":{"n":1}}`)
	do(t, "PUT", base+"/s.json", `{"x":5,"y":"a","z":false,"w":5}`)
	cases := []struct {
		path, want string
	}{
		{`/d.json?orderBy="$key"&limitToFirst=2`, `{"10":{"h":1},"9":{"h":"s"}}`}, // integer keys first, numerically
		{`/d.json?orderBy="$key"&limitToLast=2`, `{"c":{"h":true},"e":{"n":1}}`},
		{`/d.json?orderBy="$key"&startAt="b"&endAt="c"`, `{"b":{"h":3,"n":"x"},"c":{"h":true}}`},
		{`/d.json?orderBy="h"&limitToFirst=3`, `{"10":{"h":1},"c":{"h":true},"e":{"n":1}}`}, // null < true < numbers
		{`/d.json?orderBy="h"&startAt=2&endAt=10`, `{"a":{"h":10},"b":{"h":3,"n":"x"}}`},
		{`/d.json?orderBy="h"&equalTo="s"`, `{"9":{"h":"s"}}`},
		{`/d.json?orderBy="h"&startAt=100`, `{"9":{"h":"s"}}`}, // strings sort after numbers
		{`/d.json?orderBy="h"&startAt=4&endAt=5`, `null`},
		{`/s.json?orderBy="$value"&limitToLast=2`, `{"x":5,"y":"a"}`}, // 5s tie: by key (w < x)
		{`/s.json?orderBy="$value"&equalTo=5`, `{"w":5,"x":5}`},
		{`/s/x.json?orderBy="$key"`, `5`},
	}
	for _, c := range cases {
		r := do(t, "GET", base+c.path, "")
		if r.code != 200 || r.body != c.want {
			t.Errorf("GET %s: %d %s, want %s", c.path, r.code, r.body, c.want)
		}
	}
	for path, wantErr := range map[string]string{
		`/d.json?limitToFirst=1`:                              "orderBy must be defined",
		`/d.json?orderBy=$key`:                                "valid JSON encoded path",
		`/d.json?orderBy="$key"&limitToFirst=-1`:              "non-negative integer",
		`/d.json?orderBy="$key"&limitToFirst=1&limitToLast=1`: "cannot both be defined",
		`/d.json?orderBy="$key"&startAt=1`:                    "must be a string",
		`/d.json?orderBy="h"&startAt={}`:                      "must be a JSON value",
		`/d.json?orderBy="h"&equalTo=1&startAt=1`:             "equalTo cannot be defined",
		`/d.json?orderBy="$key"&shallow=true`:                 "shallow cannot be combined",
		`/d.json?orderBy="a.b"`:                               "valid child path",
	} {
		r := do(t, "GET", base+path, "")
		if r.code != 400 || !strings.Contains(r.body, wantErr) {
			t.Errorf("GET %s: %d %s, want 400 with %q", path, r.code, r.body, wantErr)
		}
	}
}
