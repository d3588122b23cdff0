package kind

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

var (
	registryMu sync.RWMutex
	registry   = map[string]*Kind{}
	// oldNames maps a kind's former names to the kind (Kind.OldNames).
	oldNames = map[string]*Kind{}
)

// register checks k (Register builds it) and adds it to the registry, under its name and its
// old names.
func register(k *Kind) {
	if k.Name == "" || k.NewConfig == nil || k.Command == nil || (k.Role != RoleComponent && k.Role != RoleWorkload) {
		panic(fmt.Sprintf("kind.Register: incomplete kind %q", k.Name))
	}
	if k.Role == RoleWorkload && k.Endpoints != nil {
		panic(fmt.Sprintf("kind.Register: workload %q declares endpoints; only components serve", k.Name))
	}
	if k.Role == RoleComponent && (k.NewProgress != nil || k.Outputs != nil) {
		panic(fmt.Sprintf("kind.Register: component %q declares a workload's progress or outputs", k.Name))
	}
	if k.Doc == "" && k.System != "" {
		k.Doc = "docs/" + k.System + ".md"
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, n := range append([]string{k.Name}, k.OldNames...) {
		if _, dup := registry[n]; dup {
			panic(fmt.Sprintf("kind.Register: duplicate kind %q", n))
		}
		if _, dup := oldNames[n]; dup {
			panic(fmt.Sprintf("kind.Register: duplicate kind %q (an old name)", n))
		}
	}
	registry[k.Name] = k
	for _, n := range k.OldNames {
		oldNames[n] = k
	}
}

// callerPackage is the import path of the package whose init called Register.
func callerPackage() string {
	pc, _, _, ok := runtime.Caller(2) // callerPackage <- Register <- the registering function
	if !ok {
		return ""
	}
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return ""
	}
	// "example.com/m/internal/kv/kinds.init.0": the package path ends at the first dot after
	// the last slash.
	name := fn.Name()
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// Lookup returns the registered kind with that name, or with that old name (Kind.OldNames).
func Lookup(name string) (*Kind, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if k, ok := registry[name]; ok {
		return k, true
	}
	k, ok := oldNames[name]
	return k, ok
}

// Renamed reports whether name is a kind's old name, and the kind's name now.
func Renamed(name string) (string, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if k, ok := oldNames[name]; ok {
		return k.Name, true
	}
	return "", false
}

// Names lists the registered kinds of a role, sorted, for error messages and help (old names
// left out).
func Names(role Role) []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var names []string
	for n, k := range registry {
		if k.Role == role {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// All returns every registered kind, sorted by name.
func All() []*Kind {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]*Kind, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Format is another file format a scenario may be written in (a Docker Compose file): the
// scenario loader asks every registered format whether it recognizes a file before reading it as
// a scenario, and runs the one that does through Convert.
type Format struct {
	Name string
	// Detect reports whether the file's parsed YAML document is in this format.
	Detect func(root *yaml.Node) bool
	// Convert reads the file and returns the scenario it means, as scenario YAML. Relative paths
	// in it are resolved against the file's directory, as in a scenario file.
	Convert func(path string) ([]byte, error)
}

var formats []Format

// RegisterFormat adds a scenario format (from a system's kinds package, in init).
func RegisterFormat(f Format) {
	registryMu.Lock()
	defer registryMu.Unlock()
	formats = append(formats, f)
}

// Formats are the registered scenario formats.
func Formats() []Format {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return append([]Format(nil), formats...)
}
