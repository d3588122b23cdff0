package discovery

import (
	"fmt"
	"sort"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Constructor builds a source from the value of its key in the proxy configuration's
// `discovery:` list (for `- kubernetes: {namespace: default}` the node is the mapping; for
// `- file: /etc/instances.yaml` the scalar). node may be nil when the key has no value. Errors
// should carry the node's line (spec.DecodeAt, spec.Errorf with an empty file name); the proxy
// adds the file name.
type Constructor func(node *yaml.Node) (Source, error)

// The registry maps YAML keys to constructors. Source packages register themselves in init(),
// so a binary includes exactly the sources it imports (the slim proxy binary leaves out heavy
// ones) and the proxy never imports a source package.
var (
	registryMu sync.RWMutex
	registry   = map[string]Constructor{}
	// platforms are the keys whose source also takes a platform endpoint's address (the
	// platform source hands it over): a key shared by a platform's name and a source that
	// does not (the kubernetes source reads a mapping, not a run's endpoint) is not one.
	platforms = map[string]bool{}
)

// RegisterPlatformSource registers the source of the platform named key (RegisterSource): its
// constructor also takes that platform's endpoint address as a scalar, as the platform source
// passes it on.
func RegisterPlatformSource(key string, c Constructor) {
	RegisterSource(key, c)
	registryMu.Lock()
	defer registryMu.Unlock()
	platforms[key] = true
}

// PlatformSourceKeys lists the platforms with a source, in order.
func PlatformSourceKeys() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	keys := make([]string, 0, len(platforms))
	for k := range platforms {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RegisterSource makes key usable in the proxy configuration's discovery list. It panics when
// key is empty or already registered: both are programming errors found at start-up.
func RegisterSource(key string, c Constructor) {
	if key == "" || c == nil {
		panic("discovery.RegisterSource: empty key or nil constructor")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[key]; dup {
		panic(fmt.Sprintf("discovery.RegisterSource: %q registered twice", key))
	}
	registry[key] = c
}

// LookupSource returns the constructor registered for key.
func LookupSource(key string) (Constructor, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	c, ok := registry[key]
	return c, ok
}

// SourceKeys lists the registered keys in order, for "allowed: ..." messages.
func SourceKeys() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	keys := make([]string, 0, len(registry))
	for k := range registry {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
