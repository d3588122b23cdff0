package httpjson

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusCreated, map[string]int{"a": 1})
	if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != "{\"a\":1}\n" {
		t.Fatalf("got %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}

	// A value that cannot be encoded is a 500 with the error body, never a 200 with half a body.
	rec = httptest.NewRecorder()
	Write(rec, http.StatusOK, math.Inf(1))
	var e ErrorBody
	if rec.Code != http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, "encode answer") {
		t.Fatalf("unencodable: got %d %q", rec.Code, rec.Body.String())
	}

	rec = httptest.NewRecorder()
	Errorf(rec, http.StatusNotFound, "no such %s", "thing")
	if rec.Code != http.StatusNotFound || rec.Body.String() != "{\"error\":\"no such thing\"}\n" {
		t.Fatalf("error: got %d %q", rec.Code, rec.Body.String())
	}
}

type body struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		status   int    // 0: decodes
		want     string // in the error
	}{
		{name: "ok", in: `{"name":"a","count":2}`},
		{name: "trailing space", in: "{\"name\":\"a\"}\n  "},
		{name: "empty", in: ``, status: 400, want: "empty"},
		{name: "syntax", in: `{"name":"a",,}`, status: 400, want: "bad JSON at byte 13"},
		{name: "truncated", in: `{"name":"a"`, status: 400, want: "ends early, after 11 bytes"},
		{name: "type", in: `{"count":"x"}`, status: 400, want: "field count: want int, got JSON string"},
		{name: "unknown field", in: `{"nmae":"a"}`, status: 400, want: `unknown field "nmae"`},
		{name: "two values", in: `{} {}`, status: 400, want: "more than one JSON value"},
		{name: "garbage after", in: `{} x`, status: 400, want: "bad JSON"},
		{name: "too large", in: `{"name":"` + strings.Repeat("x", 100) + `"}`, status: 413, want: "larger than 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.in))
			var v body
			err := Decode(httptest.NewRecorder(), r, 64, &v)
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("Decode(%q): %v", tc.in, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode(%q) = nil, want an error with %q", tc.in, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || Status(err) != tc.status {
				t.Fatalf("Decode(%q) = %v (status %d), want %q and %d", tc.in, err, Status(err), tc.want, tc.status)
			}
		})
	}
}

// FuzzDecode: any body either decodes or returns an error; nothing panics and the limit holds.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"name":"a","count":1}`, `{`, `[]`, `{"count":1e400}`, "{}\n{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(in))
		var v body
		err := Decode(httptest.NewRecorder(), r, 256, &v)
		if err == nil && len(in) > 256 {
			t.Fatalf("a %d-byte body decoded past the 256-byte limit", len(in))
		}
	})
}
