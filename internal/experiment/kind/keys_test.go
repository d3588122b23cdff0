package kind_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
)

type keysConfig struct {
	Port     int           `yaml:"port"`
	Timeout  spec.Duration `yaml:"timeout"`
	Tags     []string      `yaml:"tags,omitempty"`
	Limits   limits        `yaml:"limits"`
	Backends []backend     `yaml:"backends"`
	Shared   `yaml:",inline"`
	Hidden   string `yaml:"-"`
	//lint:ignore U1000 an unexported field, which the keys listing must skip
	internal int
}

type limits struct {
	CPUs float64 `yaml:"cpus"`
}

type backend struct {
	Addr string `yaml:"addr"`
}

type Shared struct {
	Verbose bool `yaml:"verbose"`
}

// TestKeys: a kind's keys are its config struct's yaml keys (inline ones flattened, nested
// ones under their parent, none of the skipped or unexported), typed and with the defaults.
func TestKeys(t *testing.T) {
	name := uniqueKind("test-keys")
	kind.Register(kind.Def[keysConfig]{
		Name: name, Role: kind.RoleComponent, System: "test", Summary: "keys",
		Defaults: func() *keysConfig {
			return &keysConfig{Port: 80, Tags: []string{"a", "b"}, Timeout: spec.Duration{Duration: 5e9}}
		},
		Command: func(kind.Env, *keysConfig) (kind.Command, error) { return kind.Command{}, nil },
	})
	k, _ := kind.Lookup(name)
	var got []string
	for _, key := range k.Keys() {
		got = append(got, key.Name+" "+key.Type+" "+key.Default)
	}
	want := []string{"port int 80", "timeout duration 5s", "tags list of string [a, b]", "limits mapping ", "limits.cpus float ",
		"backends list of mapping ", "backends[].addr string ", "verbose bool "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("keys\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := "github.com/continuum-project/continuum/internal/experiment/kind_test"; k.Package != want {
		t.Errorf("package %q, want the registering one, %s", k.Package, want)
	}
	if k.Doc != "docs/test.md" {
		t.Errorf("doc %q, want the system's page", k.Doc)
	}
}

// TestOldNames: a kind is found under its old names, which Renamed maps to its name and Names
// does not list; an old name cannot be taken by another kind.
func TestOldNames(t *testing.T) {
	name, old := uniqueKind("test-renamed"), uniqueKind("test-old")
	def := kind.Def[keysConfig]{
		Name: name, OldNames: []string{old}, Role: kind.RoleWorkload, System: "test", Summary: "renamed",
		Defaults: func() *keysConfig { return &keysConfig{} },
		Command:  func(kind.Env, *keysConfig) (kind.Command, error) { return kind.Command{}, nil },
	}
	kind.Register(def)
	if k, ok := kind.Lookup(old); !ok || k.Name != name {
		t.Errorf("Lookup(%q) = %v, %v", old, k, ok)
	}
	if now, ok := kind.Renamed(old); !ok || now != name {
		t.Errorf("Renamed(%q) = %q, %v", old, now, ok)
	}
	if _, ok := kind.Renamed(name); ok {
		t.Errorf("Renamed(%q): a name now is no old name", name)
	}
	for _, n := range kind.Names(kind.RoleWorkload) {
		if n == old {
			t.Errorf("Names lists the old name %q", old)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a kind named as another's old name registered")
		}
	}()
	def.Name, def.OldNames = old, nil
	kind.Register(def)
}

// TestFieldErrors: every problem is kept, each names its key and flag, nested lists merge
// under their key, and errors.As finds the list through wrapping.
func TestFieldErrors(t *testing.T) {
	var nested kind.FieldErrors
	nested.Add("addr", "", "required")
	var errs kind.FieldErrors
	if errs.Err() != nil {
		t.Fatal("empty list is an error")
	}
	errs.Add("port", "--port", "want 1..65535, got %d", 0)
	errs.AddErr("timeout", "--timeout", errors.New("negative"))
	errs.AddErr("backends[0]", "", nested.Err())
	errs.AddErr("ignored", "", nil)
	err := errs.Err()
	want := "port (--port): want 1..65535, got 0\ntimeout (--timeout): negative\nbackends[0].addr: required"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want\n%s", err, want)
	}
	var got kind.FieldErrors
	if !errors.As(errWrap{err}, &got) || len(got) != 3 || got[2].Key != "backends[0].addr" {
		t.Errorf("errors.As: %v", got)
	}
}

type errWrap struct{ error }

func (e errWrap) Unwrap() error { return e.error }
