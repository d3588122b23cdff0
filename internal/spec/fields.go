package spec

import (
	"reflect"
	"strings"
)

// field is one YAML key a struct accepts.
type field struct {
	name string
	typ  reflect.Type
}

// structFields lists the YAML keys of t in declaration order, following yaml.v3's rules: the tag
// name or the lowercased field name, "-" skipped, ",inline" structs flattened. anyKey is true when
// an inline map takes the keys no field claims.
func structFields(t reflect.Type) (fields []field, anyKey bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.PkgPath != "" && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				sub, any := structFields(ft)
				fields = append(fields, sub...)
				anyKey = anyKey || any
			case reflect.Map:
				anyKey = true
			}
			continue
		}
		if f.PkgPath != "" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields = append(fields, field{name, f.Type})
	}
	return fields, anyKey
}

// FieldNames lists the YAML keys a struct type accepts, for messages and path resolution.
func FieldNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	fs, _ := structFields(t)
	return fieldNames(fs)
}

// FieldType returns the Go type of the struct field with YAML key name.
func FieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	fs, _ := structFields(t)
	f, ok := lookupField(fs, name)
	return f.typ, ok
}

func fieldNames(fs []field) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

func lookupField(fs []field, name string) (field, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// closest returns the allowed name nearest to s if it is a likely typo (edit distance <= 2, and
// less than half of s), else "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD && d*2 < len(s)+1 {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
