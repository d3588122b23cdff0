package rules

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// snapshot is a reference to the node at path in one view of the database (root/data or newData);
// nothing is read until a method needs the value.
type snapshot struct {
	view *view
	path []string
}

// env is what an expression sees.
type env struct {
	auth    any // nil or map[string]any{"uid", "provider", "token"}
	now     float64
	root    *view // the data before the write
	newRoot *view // the data after the write (nil for reads)
	path    []string
	vars    map[string]string
}

// readError is a failure of Data: unlike an expression's errors, it is not a denial but a
// failure of the request, and is passed up.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }

var errType = errors.New("type error")

func typeErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errType, fmt.Sprintf(format, a...))
}

func (en *env) eval(e *expr) (any, error) {
	switch e.kind {
	case eLit:
		return e.val, nil
	case eRegex:
		return e.re, nil
	case eVar:
		switch e.name {
		case "auth":
			return en.auth, nil
		case "now":
			return en.now, nil
		case "root":
			return snapshot{en.root, nil}, nil
		case "data":
			return snapshot{en.root, en.path}, nil
		case "newData":
			if en.newRoot == nil {
				return nil, typeErr("newData is only defined for writes")
			}
			return snapshot{en.newRoot, en.path}, nil
		}
		v, ok := en.vars[e.name]
		if !ok {
			return nil, typeErr("%s is not bound", e.name)
		}
		return v, nil
	case eArray:
		a := make([]any, len(e.args))
		for i, x := range e.args {
			v, err := en.eval(x)
			if err != nil {
				return nil, err
			}
			a[i] = v
		}
		return a, nil
	case eMember:
		obj, err := en.eval(e.args[0])
		if err != nil {
			return nil, err
		}
		name := e.name
		if len(e.args) == 2 {
			k, err := en.eval(e.args[1])
			if err != nil {
				return nil, err
			}
			s, ok := k.(string)
			if !ok {
				return nil, typeErr("a [] index must be a string")
			}
			name = s
		}
		switch o := obj.(type) {
		case string:
			if name == "length" {
				return float64(len([]rune(o))), nil
			}
		case map[string]any:
			return o[name], nil // a missing claim is null, so `auth.token.admin === true` works
		}
		return nil, typeErr("no property %q on %s", name, typeName(obj))
	case eCall:
		return en.call(e)
	case eUnary:
		x, err := en.eval(e.args[0])
		if err != nil {
			return nil, err
		}
		if e.name == "!" {
			b, ok := x.(bool)
			if !ok {
				return nil, typeErr("! needs a boolean, got %s", typeName(x))
			}
			return !b, nil
		}
		f, ok := x.(float64)
		if !ok {
			return nil, typeErr("unary - needs a number, got %s", typeName(x))
		}
		return -f, nil
	case eCond:
		c, err := en.evalBool(e.args[0])
		if err != nil {
			return nil, err
		}
		if c {
			return en.eval(e.args[1])
		}
		return en.eval(e.args[2])
	case eBinary:
		return en.binary(e)
	}
	return nil, typeErr("unknown expression")
}

func (en *env) evalBool(e *expr) (bool, error) {
	v, err := en.eval(e)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, typeErr("want a boolean, got %s", typeName(v))
	}
	return b, nil
}

func (en *env) binary(e *expr) (any, error) {
	switch e.name {
	case "&&", "||": // short-circuit, as `auth != null && auth.uid == $uid` relies on
		l, err := en.evalBool(e.args[0])
		if err != nil {
			return nil, err
		}
		if l == (e.name == "||") {
			return l, nil
		}
		return en.evalBool(e.args[1])
	}
	l, err := en.eval(e.args[0])
	if err != nil {
		return nil, err
	}
	r, err := en.eval(e.args[1])
	if err != nil {
		return nil, err
	}
	switch e.name {
	case "==", "===":
		return equal(l, r)
	case "!=", "!==":
		eq, err := equal(l, r)
		if err != nil {
			return nil, err
		}
		return !eq, nil
	case "<", ">", "<=", ">=":
		c, err := compare(l, r)
		if err != nil {
			return nil, err
		}
		switch e.name {
		case "<":
			return c < 0, nil
		case ">":
			return c > 0, nil
		case "<=":
			return c <= 0, nil
		}
		return c >= 0, nil
	case "+":
		ls, lok := l.(string)
		rs, rok := r.(string)
		if lok || rok { // string concatenation, numbers written as JavaScript writes them
			if !lok {
				if ls, lok = numString(l); !lok {
					return nil, typeErr("cannot add %s and a string", typeName(l))
				}
			}
			if !rok {
				if rs, rok = numString(r); !rok {
					return nil, typeErr("cannot add a string and %s", typeName(r))
				}
			}
			return ls + rs, nil
		}
	}
	lf, lok := l.(float64)
	rf, rok := r.(float64)
	if !lok || !rok {
		return nil, typeErr("%s needs numbers, got %s and %s", e.name, typeName(l), typeName(r))
	}
	switch e.name {
	case "+":
		return lf + rf, nil
	case "-":
		return lf - rf, nil
	case "*":
		return lf * rf, nil
	case "/":
		return lf / rf, nil
	}
	return math.Mod(lf, rf), nil // JavaScript's %: the sign of the dividend, NaN for % 0
}

func numString(v any) (string, bool) {
	f, ok := v.(float64)
	if !ok {
		return "", false
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}

// equal is strict equality on scalars (no coercion: 1 == '1' is false); snapshots and objects
// cannot be compared, as in Firebase.
func equal(l, r any) (bool, error) {
	if l == nil || r == nil { // anything may be compared with null: `auth != null`
		if _, ok := l.(snapshot); ok {
			return false, typeErr("cannot compare a snapshot: call val()")
		}
		if _, ok := r.(snapshot); ok {
			return false, typeErr("cannot compare a snapshot: call val()")
		}
		return l == nil && r == nil, nil
	}
	switch l.(type) {
	case nil, bool, float64, string:
	default:
		return false, typeErr("cannot compare %s", typeName(l))
	}
	switch r.(type) {
	case nil, bool, float64, string:
	default:
		return false, typeErr("cannot compare %s", typeName(r))
	}
	return l == r, nil
}

func compare(l, r any) (int, error) {
	switch a := l.(type) {
	case float64:
		if b, ok := r.(float64); ok {
			switch {
			case a < b:
				return -1, nil
			case a > b:
				return 1, nil
			}
			return 0, nil
		}
	case string:
		if b, ok := r.(string); ok {
			return strings.Compare(a, b), nil
		}
	}
	return 0, typeErr("cannot order %s and %s", typeName(l), typeName(r))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case snapshot:
		return "a snapshot"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case *regexp.Regexp:
		return "a regular expression"
	}
	return fmt.Sprintf("%T", v)
}

func (en *env) call(e *expr) (any, error) {
	recv, err := en.eval(e.args[0])
	if err != nil {
		return nil, err
	}
	args := make([]any, len(e.args)-1)
	for i, a := range e.args[1:] {
		if args[i], err = en.eval(a); err != nil {
			return nil, err
		}
	}
	switch r := recv.(type) {
	case snapshot:
		return r.call(e.name, args)
	case string:
		return stringCall(r, e.name, args)
	}
	return nil, typeErr("%s() called on %s", e.name, typeName(recv))
}

func stringArg(name string, args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", typeErr("%s() needs a string argument, got %s", name, typeName(args[i]))
	}
	return s, nil
}

func stringCall(s, name string, args []any) (any, error) {
	switch name {
	case "toLowerCase":
		return strings.ToLower(s), nil
	case "toUpperCase":
		return strings.ToUpper(s), nil
	case "matches":
		re, ok := args[0].(*regexp.Regexp)
		if !ok {
			return nil, typeErr("matches() needs a regular expression literal /.../")
		}
		return re.MatchString(s), nil
	case "contains", "beginsWith", "endsWith":
		a, err := stringArg(name, args, 0)
		if err != nil {
			return nil, err
		}
		switch name {
		case "contains":
			return strings.Contains(s, a), nil
		case "beginsWith":
			return strings.HasPrefix(s, a), nil
		}
		return strings.HasSuffix(s, a), nil
	case "replace":
		a, err := stringArg(name, args, 0)
		if err != nil {
			return nil, err
		}
		b, err := stringArg(name, args, 1)
		if err != nil {
			return nil, err
		}
		return strings.ReplaceAll(s, a, b), nil
	}
	return nil, typeErr("%s() is not a string method", name)
}

func (sn snapshot) value() (any, error) {
	v, err := sn.view.get(sn.path)
	if err != nil {
		return nil, readError{err}
	}
	return v, nil
}

func (sn snapshot) child(p string) (snapshot, error) {
	segs := splitPath(p)
	if segs == nil && p != "" && p != "/" {
		return snapshot{}, typeErr("bad child path %q", p)
	}
	return snapshot{sn.view, append(append([]string(nil), sn.path...), segs...)}, nil
}

func (sn snapshot) call(name string, args []any) (any, error) {
	switch name {
	case "child", "hasChild":
		p, err := stringArg(name, args, 0)
		if err != nil {
			return nil, err
		}
		c, err := sn.child(p)
		if err != nil || name == "child" {
			return c, err
		}
		v, err := c.value()
		return v != nil, err
	case "parent":
		if len(sn.path) == 0 {
			return nil, typeErr("the root has no parent")
		}
		return snapshot{sn.view, sn.path[:len(sn.path)-1]}, nil
	case "getPriority":
		return nil, nil // priorities are not stored
	case "hasChildren":
		v, err := sn.value()
		if err != nil {
			return nil, err
		}
		m, isObj := v.(map[string]any)
		if len(args) == 0 {
			return isObj, nil
		}
		list, ok := args[0].([]any)
		if !ok {
			return nil, typeErr("hasChildren() needs an array of strings")
		}
		for _, c := range list {
			k, ok := c.(string)
			if !ok {
				return nil, typeErr("hasChildren() needs an array of strings")
			}
			if !isObj {
				return false, nil
			}
			if lookup(m, splitPath(k)) == nil {
				return false, nil
			}
		}
		return true, nil
	}
	v, err := sn.value()
	if err != nil {
		return nil, err
	}
	switch name {
	case "val":
		return v, nil
	case "exists":
		return v != nil, nil
	case "isNumber":
		_, ok := v.(float64)
		return ok, nil
	case "isString":
		_, ok := v.(string)
		return ok, nil
	case "isBoolean":
		_, ok := v.(bool)
		return ok, nil
	}
	return nil, typeErr("%s() is not a snapshot method", name)
}

// splitPath splits a child path ("a/b", "/a/b/") into segments; nil when it names no child.
func splitPath(p string) []string {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	return segs
}
