package chaos

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDResource is where CustomResourceDefinitions live, for creating CRDs() through a dynamic
// client.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRDs returns minimal CustomResourceDefinitions for NetworkChaos and PodChaos (group
// chaos-mesh.org, version v1alpha1, namespaced, schema: type object with
// x-kubernetes-preserve-unknown-fields), which tests register on a bare control plane to check the
// objects the platform produces.
//
// They are not a substitute for installing Chaos Mesh: they carry none of its validation or
// defaulting, and without its controller and daemons nothing acts on the objects, so no packet is
// delayed or dropped. They are unstructured apiextensions.k8s.io/v1 objects (create them through
// CRDResource) so that this package does not pull in the apiextensions server module.
func CRDs() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		crd("networkchaos", "NetworkChaos", "NetworkChaosList", "networkchaos"),
		crd("podchaos", "PodChaos", "PodChaosList", "podchaos"),
	}
}

func crd(plural, kind, listKind, singular string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + GroupVersion.Group},
		"spec": map[string]any{
			"group": GroupVersion.Group,
			"scope": "Namespaced",
			"names": map[string]any{
				"plural":   plural,
				"singular": singular,
				"kind":     kind,
				"listKind": listKind,
			},
			"versions": []any{map[string]any{
				"name":    GroupVersion.Version,
				"served":  true,
				"storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":                                 "object",
					"x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}
