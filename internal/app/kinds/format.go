package kinds

import (
	"context"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/app/compose"
	"github.com/continuum-project/continuum/internal/experiment/kind"
)

func init() {
	kind.RegisterFormat(kind.Format{Name: "Compose", Detect: isCompose, Convert: func(path string) ([]byte, error) {
		return compose.Convert(context.Background(), path, compose.Options{})
	}})
}

// isCompose: a mapping with services and without a scenario's components is a Compose file.
func isCompose(root *yaml.Node) bool {
	if root == nil || root.Kind != yaml.MappingNode {
		return false
	}
	var services, components bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "services":
			services = true
		case "components":
			components = true
		}
	}
	return services && !components
}
