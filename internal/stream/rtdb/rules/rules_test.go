package rules

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// tree is a Data over a decoded JSON document; it counts reads.
type tree struct {
	v     any
	reads int
}

func (t *tree) Get(path []string) (any, error) { t.reads++; return lookup(t.v, path), nil }

func jsonTree(t *testing.T, s string) *tree {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return &tree{v: v}
}

func mustParse(t *testing.T, src string) *Ruleset {
	t.Helper()
	r, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return r
}

func path(p string) []string { return splitPath(p) }

func val(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

var now = time.UnixMilli(1_700_000_000_000)

// The examples of Firebase's rules documentation.
const userOwned = `{
  // users may read and write only their own node
  "rules": {
    "users": {
      "$uid": {
        ".read": "$uid === auth.uid",
        ".write": "auth != null && auth.uid == $uid",
        "name": {".validate": "newData.isString() && newData.val().length > 0 && newData.val().length <= 20"},
        "age": {".validate": "newData.isNumber() && newData.val() >= 0"},
        "$other": {".validate": false}
      }
    },
    "admins": {".read": false},
    "posts": {
      ".read": true,
      ".write": "root.child('admins').child(auth.uid).exists()",
      "$post": {
        ".validate": "newData.hasChildren(['title', 'at']) && newData.child('at').val() <= now",
        "title": {".validate": "newData.val().matches(/^[A-Z].*$/)"}
      }
    }
  }
}`

func TestUserOwnedData(t *testing.T) {
	r := mustParse(t, userOwned)
	db := jsonTree(t, `{"users": {"ada": {"name": "Ada"}}, "admins": {"grace": true}}`)
	ada := &Auth{UID: "ada", Provider: "password"}
	for _, c := range []struct {
		auth *Auth
		p    string
		want bool
	}{
		{ada, "users/ada", true},
		{ada, "users/ada/name", true}, // cascades from users/$uid
		{ada, "users/bob", false},
		{nil, "users/ada", false},
		{ada, "users", false}, // rules are not filters
		{ada, "", false},
		{ada, "admins", false},
		{nil, "posts/x", true},
	} {
		got, err := r.CanRead(c.auth, path(c.p), db, now)
		if err != nil || got != c.want {
			t.Errorf("read %q as %v: %v, %v; want %v", c.p, c.auth, got, err, c.want)
		}
	}
	w := func(a *Auth, p, v string) bool {
		t.Helper()
		ok, err := r.CanWrite(a, []Update{{path(p), val(t, v)}}, db, now)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, c := range []struct {
		auth *Auth
		p, v string
		want bool
	}{
		{ada, "users/ada", `{"name": "Ada", "age": 36}`, true},
		{ada, "users/ada/name", `"Ada Lovelace"`, true},
		{ada, "users/ada/name", `"This name is much too long"`, false},
		{ada, "users/ada/name", `""`, false},
		{ada, "users/ada/name", `7`, false},
		{ada, "users/ada/age", `-1`, false},
		{ada, "users/ada/age", `"old"`, false},
		{ada, "users/ada/extra", `1`, false}, // $other: .validate false
		{ada, "users/ada", `{"name": "Ada", "x": 1}`, false},
		{ada, "users/ada/name", `null`, true}, // deletions are not validated
		{ada, "users/bob/name", `"Bob"`, false},
		{nil, "users/ada/name", `"Ada"`, false},
		{ada, "posts/p1", `{"title": "Hello", "at": 1}`, false}, // not an admin
		{&Auth{UID: "grace"}, "posts/p1", `{"title": "Hello", "at": 1}`, true},
		{&Auth{UID: "grace"}, "posts/p1", `{"title": "hello", "at": 1}`, false},
		{&Auth{UID: "grace"}, "posts/p1", `{"title": "Hello"}`, false},
		{&Auth{UID: "grace"}, "posts/p1", `{"title": "Hello", "at": 1800000000000}`, false}, // in the future
	} {
		if got := w(c.auth, c.p, c.v); got != c.want {
			t.Errorf("write %s at %q as %v: %v, want %v", c.v, c.p, c.auth, got, c.want)
		}
	}
}

func TestCascadingGrants(t *testing.T) {
	r := mustParse(t, `{"rules": {
	  "foo": {".read": true, ".write": true,
	    "bar": {".read": false, ".write": false}},
	  "lock": {".write": "data.val() == null || auth.token.admin === true"}
	}}`)
	db := jsonTree(t, `{"lock": 1}`)
	for _, p := range []string{"foo", "foo/bar", "foo/bar/baz"} {
		if ok, _ := r.CanRead(nil, path(p), db, now); !ok {
			t.Errorf("read %s denied: a grant above cannot be revoked below", p)
		}
		if ok, _ := r.CanWrite(nil, []Update{{path(p), 1.0}}, db, now); !ok {
			t.Errorf("write %s denied", p)
		}
	}
	if ok, _ := r.CanWrite(&Auth{UID: "u"}, []Update{{path("lock"), 2.0}}, db, now); ok {
		t.Error("lock written without the admin claim")
	}
	if ok, _ := r.CanWrite(&Auth{UID: "u", Token: map[string]any{"admin": true}}, []Update{{path("lock"), 2.0}}, db, now); !ok {
		t.Error("lock not written with the admin claim")
	}
	// A multi-path write is allowed only when every path is.
	if ok, _ := r.CanWrite(nil, []Update{{path("foo/a"), 1.0}, {path("other"), 1.0}}, db, now); ok {
		t.Error("multi-path write allowed with one path denied")
	}
	if ok, _ := r.CanWrite(nil, []Update{{path("foo/a"), 1.0}, {path("foo/b"), 1.0}}, db, now); !ok {
		t.Error("multi-path write denied with every path allowed")
	}
}

func TestNewDataSeesEveryPathOfAMultiPathWrite(t *testing.T) {
	r := mustParse(t, `{"rules": {".write": true,
	  "a": {".validate": "newData.val() == newData.parent().child('b').val()"}}}`)
	db := jsonTree(t, `{"a": 1, "b": 1}`)
	if ok, _ := r.CanWrite(nil, []Update{{path("a"), 2.0}}, db, now); ok {
		t.Error("a=2 with b=1 passed")
	}
	if ok, _ := r.CanWrite(nil, []Update{{path("a"), 2.0}, {path("b"), 2.0}}, db, now); !ok {
		t.Error("a=2, b=2 together failed")
	}
}

func TestExpressions(t *testing.T) {
	db := jsonTree(t, `{"s": "Hello World", "n": 5, "b": true, "o": {"x": 1, "y": {"z": "q"}}}`)
	auth := &Auth{UID: "u1", Provider: "password", Token: map[string]any{"email": "a@b.c", "email_verified": true}}
	for _, c := range []struct {
		e    string
		want bool
	}{
		{"true", true}, {"false", false}, {"!false", true}, {"1 + 2 * 3 == 7", true},
		{"(1 + 2) * 3 === 9", true}, {"10 % 4 == 2", true}, {"-3 < -2", true}, {"7 / 2 == 3.5", true},
		{"'a' + 1 == 'a1'", true}, {"'a' < 'b'", true}, {"1 == '1'", false}, {"1 != '1'", true},
		{"null == null", true}, {"true ? 1 == 1 : false", true}, {"false ? true : 2 > 3", false},
		{"root.child('s').val().length == 11", true},
		{"root.child('s').val().contains('World')", true},
		{"root.child('s').val().beginsWith('Hell') && root.child('s').val().endsWith('rld')", true},
		{"root.child('s').val().replace('o', '0') == 'Hell0 W0rld'", true},
		{"root.child('s').val().toLowerCase() == 'hello world'", true},
		{"root.child('s').val().toUpperCase() == 'HELLO WORLD'", true},
		{"root.child('s').val().matches(/^hello/i)", true},
		{"root.child('s').val().matches(/^hello/)", false},
		{"root.child('s').isString() && root.child('n').isNumber() && root.child('b').isBoolean()", true},
		{"root.child('o').hasChildren()", true}, {"root.child('s').hasChildren()", false},
		{"root.child('o').hasChildren(['x', 'y'])", true}, {"root.child('o').hasChildren(['x', 'w'])", false},
		{"root.child('o').hasChild('y/z')", true}, {"root.child('o/y/z').val() == 'q'", true},
		{"root.child('o').child('y').parent().child('x').val() == 1", true},
		{"root.child('missing').exists()", false}, {"root.child('o').getPriority() == null", true},
		{"data.val() == null", true}, // data at the root of a path "" is the root... of an absent path
		{"auth.uid == 'u1' && auth.provider == 'password'", true},
		{"auth.token.email_verified == true && auth.token.email.endsWith('@b.c')", true},
		{"auth.token.missing == null", true},
		{"auth.token['email'] == 'a@b.c'", true},
		{"now > 0", true},
		// Errors are false.
		{"root.child('n').val().length > 0", false}, {"1 + true == 1", false}, {"!1", false},
		{"root.child('o').val() == 1", false}, {"1 < 'a'", false}, {"root.parent().exists()", false},
	} {
		r := mustParse(t, `{"rules": {"x": {".read": `+quote(c.e)+`}}}`)
		got, err := r.CanRead(auth, path("x"), &tree{v: map[string]any{"x": nil, "s": lookup(db.v, path("s")),
			"n": lookup(db.v, path("n")), "b": lookup(db.v, path("b")), "o": lookup(db.v, path("o"))}}, now)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.e, got, err, c.want)
		}
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		src, want string
		line, col int
	}{
		{`{"rules": {".read": "auth != null &&"}}`, "expected a value", 1, 37},
		{"{\n  \"rules\": {\n    \".write\": \"foo == 1\"\n  }\n}", "unknown variable 'foo'", 3, 16},
		{`{"rules": {".read": "newData.exists()"}}`, "unknown variable 'newData'", 1, 22},
		{`{"rules": {".red": true}}`, `unknown rule ".red"`, 1, 12},
		{`{"rules": {"$a": {}, "$b": {}}}`, "two wildcards", 1, 22},
		{`{"rules": {"a": 1}}`, "must be an object", 1, 17},
		{`{"rulez": {}}`, `unknown top-level key "rulez"`, 1, 2},
		{"{\"rules\": {\n  \"a\": {\".read\": true,}\n}}", "expected a key", 2, 23},
		{`{"rules": {".read": "data.val().foo()"}}`, "unknown method foo()", 1, 33},
		{`{"rules": {".read": "data.child()"}}`, "takes 1 argument", 1, 27},
		{`{"rules": {".read": "'abc"}}`, "unterminated string", 1, 22},
		{`{"rules": {".indexOn": 1}}`, ".indexOn", 1, 24},
		{`{"rules": {".validate": 5}}`, "want true, false or an expression", 1, 25},
		{`{"rules": {".read": "x.matches(/a/g)"}}`, "unknown variable", 1, 22},
		{`{"rules": {"$x": {".read": "$x.matches(/a/g)"}}}`, "flag", 1, 40},
	} {
		_, err := Parse([]byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a ParseError", c.src, err)
			continue
		}
		if !strings.Contains(pe.Msg, c.want) || pe.Line != c.line || pe.Col != c.col {
			t.Errorf("%s: %v; want %q at %d:%d", c.src, err, c.want, c.line, c.col)
		}
	}
}

func TestIndexOnAndCommentsAccepted(t *testing.T) {
	r := mustParse(t, `/* header */ {"rules": {
	  "dinos": {".indexOn": ["height", "length"], ".read": true}, // trailing comment
	  "scores": {".indexOn": ".value"}
	}}`)
	if ok, _ := r.CanRead(nil, path("dinos/a"), &tree{}, now); !ok {
		t.Error("dinos not readable")
	}
}

func TestReadsAreLazyAndCached(t *testing.T) {
	r := mustParse(t, `{"rules": {"$x": {".read": "data.child('a').exists() && data.child('b').exists() && data.exists()"}}}`)
	db := jsonTree(t, `{"k": {"a": 1, "b": 2}}`)
	if ok, _ := r.CanRead(nil, path("k"), db, now); !ok {
		t.Fatal("denied")
	}
	if db.reads > 3 {
		t.Errorf("%d reads for three children of one node", db.reads)
	}
}

func TestDataErrorsFailTheRequest(t *testing.T) {
	r := mustParse(t, `{"rules": {".read": "root.child('a').exists()"}}`)
	boom := errors.New("kv down")
	_, err := r.CanRead(nil, nil, failing{boom}, now)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the Data error", err)
	}
}

type failing struct{ err error }

func (f failing) Get([]string) (any, error) { return nil, f.err }
