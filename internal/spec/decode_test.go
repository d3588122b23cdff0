package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type inner struct {
	Delay Duration `yaml:"delay,omitempty"`
	Queue int      `yaml:"queue,omitempty"`
}

type outer struct {
	Name   string            `yaml:"name"`
	Count  int               `yaml:"count"`
	Ratio  float64           `yaml:"ratio,omitempty"`
	On     bool              `yaml:"on,omitempty"`
	Size   Bytes             `yaml:"size,omitempty"`
	Items  []item            `yaml:"items,omitempty"`
	Labels map[string]string `yaml:"labels,omitempty"`
	Hidden string            `yaml:"-"`
}

type item struct {
	Between []string `yaml:"between"`
	inner   `yaml:",inline"`
	Loss    *Percent `yaml:"loss,omitempty"`
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error, "" = success
	}{
		{"ok", "name: a\ncount: 2\nsize: 1Gi\nitems:\n  - between: [a, b]\n    delay: 10ms\n    loss: 1%\nlabels: {x: y}\n", nil},
		{"unknown top", "name: a\ncont: 2\n", []string{"f.yaml:2:1:", `unknown field "cont"`, `did you mean "count"`, "allowed: name, count, ratio, on, size, items, labels"}},
		{"unknown inline", "items:\n  - between: [a, b]\n    dealy: 1ms\n", []string{"f.yaml:3:5:", `unknown field "dealy" in items[0]`, "allowed: between, delay, queue, loss"}},
		{"hidden field", "hidden: x\n", []string{"f.yaml:1:1:", `unknown field "hidden"`}},
		{"wrong int", "count: lots\n", []string{"f.yaml:1:8:", "count: want an integer, got \"lots\""}},
		{"wrong list", "items: 3\n", []string{"f.yaml:1:8:", "items: want a list"}},
		{"wrong struct", "items: [3]\n", []string{"f.yaml:1:9:", "items[0]: want a mapping with fields between, delay, queue, loss"}},
		{"scalar for string", "name: [a]\n", []string{"f.yaml:1:7:", "name: want a string, got a list"}},
		{"bad unit", "items:\n  - delay: 10\n", []string{"f.yaml:2:12:", "items[0].delay: invalid duration \"10\""}},
		{"bad pointer unit", "items:\n  - loss: 5\n", []string{"f.yaml:2:11:", "followed by %"}},
		{"bad size", "size: 1Gb\n", []string{"f.yaml:1:7:", "size: invalid size"}},
		{"several", "count: x\nsize: y\nbogus: 1\n", []string{"f.yaml:1:8:", "f.yaml:2:7:", "f.yaml:3:1:"}},
		{"duplicate", "name: a\nname: b\n", []string{"f.yaml:2:1:", "name: set twice (first at line 1)"}},
		{"merge key", "base: &b {delay: 1ms}\n", []string{`unknown field "base"`}},
		{"null ok", "name: ~\nitems:\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse("f.yaml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var out outer
			err = Decode("f.yaml", n, &out)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDecodeMergeAndValues(t *testing.T) {
	doc := "items:\n  - &x {between: [a, b], delay: 5ms}\n  - <<: *x\n    queue: 7\n"
	n, err := Parse("f.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var out outer
	if err := Decode("f.yaml", n, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 2 || out.Items[1].Delay.String() != "5ms" || out.Items[1].Queue != 7 {
		t.Errorf("decoded %+v", out.Items)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"", "f.yaml: the file is empty"},
		{"a: [1, 2\n", "f.yaml:"},
		{"a: 1\n---\nb: 2\n", "f.yaml:2:1: only one YAML document"},
		{"a: 1\n  b: 2\n", "f.yaml:2"},
	} {
		_, err := Parse("f.yaml", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error %v, want containing %q", tt.doc, err, tt.want)
		}
	}
}

func TestDecodeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(p, []byte("name: a\ncount: 1\nextra: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out outer
	n, err := DecodeFile(p, &out)
	if n == nil || err == nil || !strings.Contains(err.Error(), p+":3:1:") {
		t.Errorf("DecodeFile: node %v, error %v", n, err)
	}
}

func TestErrorsAndLocate(t *testing.T) {
	n, _ := Parse("f.yaml", []byte("a:\n  b: [x, y]\n"))
	if got := Locate(n, "a", "b", 1); got.Value != "y" || got.Line != 2 {
		t.Errorf("Locate = %+v", got)
	}
	if got := Locate(n, "a", "zz"); got.Line != 2 || got.Kind != 4 {
		t.Errorf("Locate fallback = %+v", got)
	}
	if !Has(n, "a", "b") || Has(n, "a", "c") {
		t.Error("Has")
	}
	var es Errors
	es.Addf("f.yaml", Locate(n, "a", "b"), "second")
	es.Addf("f.yaml", n, "first")
	es.Add(At("f.yaml", n, os.ErrNotExist))
	want := "f.yaml:1:1: first\nf.yaml:1:1: file does not exist\nf.yaml:2:6: second"
	if err := es.Err(); err == nil || err.Error() != want {
		t.Errorf("Errors = %q, want %q", err, want)
	}
	if (Errors{}).Err() != nil {
		t.Error("empty Errors.Err() != nil")
	}
	if got := (&Error{File: "f", Msg: "m"}).Error(); got != "f: m" {
		t.Errorf("no-line error = %q", got)
	}
}
