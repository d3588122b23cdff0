package rules

import (
	"testing"
)

// FuzzParseExpr feeds arbitrary text to the expression parser and evaluates what parses: neither
// may panic or recurse without bound.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{
		"auth != null && auth.uid == $uid", "root.child('admins').child(auth.uid).exists()",
		"newData.isString() && newData.val().length < 100", "newData.val().matches(/^[a-z]+$/i)",
		"data.exists() ? data.val() + 1 == newData.val() : newData.val() == 0",
		"newData.hasChildren(['a', \"b\"])", "-(-1) % 3 >= now / 2", "((((true))))", "a[", "/",
		"'\\u0041' === \"A\"", "!!!false", "data.parent().parent().hasChild('x/y')",
	} {
		f.Add(s)
	}
	vars := map[string]bool{"auth": true, "now": true, "root": true, "data": true, "newData": true, "$uid": true}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := parseExpr(src, vars)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("%q: error %T is not a *SyntaxError", src, err)
			}
			return
		}
		db := &tree{v: map[string]any{"a": map[string]any{"b": "c"}, "n": 1.0}}
		en := &env{auth: (&Auth{UID: "u"}).value(), now: 1, root: newView(db),
			newRoot: newView(overlay{newView(db), []Update{{[]string{"a"}, 2.0}}}),
			path:    []string{"a"}, vars: map[string]string{"$uid": "u"}}
		en.eval(e)
	})
}

// FuzzParse feeds arbitrary rules files to Parse: it returns a ruleset or an error, never panics.
func FuzzParse(f *testing.F) {
	f.Add(userOwned)
	f.Add(`{"rules": {".read": true, "$a": {"b": {".write": "$a == auth.uid"}}}}`)
	f.Add("{\"rules\": /* c */ {\".indexOn\": [\"x\"]}}")
	f.Fuzz(func(t *testing.T, src string) {
		r, err := Parse([]byte(src))
		if err == nil {
			r.CanRead(nil, []string{"a", "b"}, &tree{}, now)
			r.CanWrite(&Auth{UID: "a"}, []Update{{[]string{"a", "b"}, map[string]any{"c": 1.0}}}, &tree{}, now)
		}
	})
}
