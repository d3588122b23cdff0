package store

import (
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// RulesKeyPrefix is the kv prefix of every database's stored rules (Store.SettingsKey):
// <prefix>/.settings/rules/<ns>. It is under the hub's watch prefix, and no data key can start
// with it (a namespace cannot contain '.').
func RulesKeyPrefix(prefix string) string { return prefix + "/.settings/rules/" }

// PatchUpdates turns a PATCH body (or a WebSocket merge's data) into updates of base's children.
func PatchUpdates(base []string, v any) ([]Update, []string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, tree.Invalid("Invalid data; couldn't parse JSON object. PATCH needs an object of children to update.")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ups []Update
	var outKeys []string
	joined := map[string]bool{}
	for _, k := range keys {
		rel, err := tree.ParsePath(k)
		if err != nil {
			return nil, nil, tree.Invalid("%s", err.Error())
		}
		if len(rel) == 0 {
			return nil, nil, tree.Invalid("Invalid PATCH key %q: empty path", k)
		}
		p := append(append([]string(nil), base...), rel...)
		if len(p) > tree.MaxDepth {
			return nil, nil, tree.Invalid("Path is too deep: more than %d segments", tree.MaxDepth)
		}
		t, err := tree.Normalize(obj[k], len(p))
		if err != nil {
			return nil, nil, tree.Invalid("%s", err.Error())
		}
		j := strings.Join(rel, "/")
		if joined[j] {
			return nil, nil, tree.Invalid("Invalid PATCH: path %q given twice", j)
		}
		joined[j] = true
		ups = append(ups, Update{p, t})
		outKeys = append(outKeys, k)
	}
	for a := range joined { // sorted order would do, but the map is small
		for b := range joined {
			if a != b && strings.HasPrefix(b, a+"/") {
				return nil, nil, tree.Invalid("Invalid PATCH: path %q is an ancestor of %q", a, b)
			}
		}
	}
	return ups, outKeys, nil
}
