package kind

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Key is one key a kind's `config:` mapping takes, as `continuum kinds NAME` lists it.
type Key struct {
	// Name is the key's path under config: "port", "sweep.rates", "endpoints[].port".
	Name string
	// Type is what the key takes: string, int, float, bool, duration, bytes, list of string,
	// mapping, list of mapping, ...
	Type string
	// Default is the value the kind's defaults give it, "" when none (the zero value).
	Default string
}

// Keys lists the keys of k's config, read from its config struct's yaml tags (the scenario
// loader decodes strictly into the same struct, so these are exactly the keys it accepts),
// with the defaults its NewConfig fills in.
func (k *Kind) Keys() []Key {
	v := reflect.ValueOf(k.NewConfig())
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var out []Key
	structKeys(v, "", 0, &out)
	return out
}

const maxKeyDepth = 4

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// structKeys appends the keys of struct value v under prefix.
func structKeys(v reflect.Value, prefix string, depth int, out *[]Key) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			for fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					fv = reflect.New(fv.Type().Elem()).Elem()
					break
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				structKeys(fv, prefix, depth, out)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml.v3's default
		}
		key := Key{Name: prefix + name, Type: typeName(f.Type), Default: defaultOf(fv)}
		*out = append(*out, key)
		if depth >= maxKeyDepth {
			continue
		}
		switch et := elemStruct(f.Type); {
		case et == nil:
		case f.Type.Kind() == reflect.Slice:
			structKeys(reflect.New(et).Elem(), key.Name+"[].", depth+1, out)
		case f.Type.Kind() == reflect.Map:
			structKeys(reflect.New(et).Elem(), key.Name+".*.", depth+1, out)
		default:
			sv := fv
			for sv.Kind() == reflect.Pointer {
				if sv.IsNil() {
					sv = reflect.New(et).Elem()
					break
				}
				sv = sv.Elem()
			}
			structKeys(sv, key.Name+".", depth+1, out)
		}
	}
}

// elemStruct is the struct type a field of type t holds keys of (a struct, a pointer to one, a
// list or a map of them), nil when t decodes itself or holds no keys.
func elemStruct(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || decodesItself(t) {
		return nil
	}
	return t
}

func decodesItself(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// typeName says what a key of type t takes, in a scenario author's words.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		// The project's own scalars (spec.Duration, spec.Bytes, ...): their name is the word.
		return strings.ToLower(t.Name())
	}
	switch t.Kind() {
	case reflect.Struct:
		return "mapping"
	case reflect.Slice, reflect.Array:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "mapping of " + typeName(t.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t.PkgPath() == "time" && t.Name() == "Duration" {
			return "duration"
		}
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Interface:
		return "any"
	}
	return t.Kind().String()
}

// defaultOf renders a default value, "" for a zero one and for structures.
func defaultOf(v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.IsZero() {
		return ""
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Map:
		return ""
	case reflect.Slice:
		if v.Len() == 0 || elemStruct(v.Type()) != nil {
			return ""
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = defaultOf(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v.Interface())
}
