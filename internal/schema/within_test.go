package schema

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestPrunesWithin(t *testing.T) {
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(`
type: object
properties:
  spec:
    type: object
    properties:
      items:
        type: array
        items: {type: object, properties: {name: {type: string}}}
      names: {type: array, items: {type: string}}
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
      open:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          inner: {type: object, properties: {a: {type: string}}}
      labels: {type: object, additionalProperties: {type: string}}
      groups: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}
`), &s); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		".spec.items":           true,  // its elements are closed objects
		".spec.items[*]":        true,  //
		".spec.items[0].name":   false, // a string
		".spec.names":           false, // strings only
		".spec.raw":             false, // keeps any field
		".spec.open":            true,  // preserves, but a declared child is closed
		".spec.open.undeclared": false, // kept whole, without a schema
		".spec.labels":          false, // a map of strings
		".spec.groups":          true,  // a map of closed objects
		".spec.missing":         false, // not kept at all
		".spec":                 true,
	} {
		if got := PrunesWithin(&s, path); got != want {
			t.Errorf("PrunesWithin(%s) = %v, want %v", path, got, want)
		}
	}
	if PrunesWithin(nil, ".spec") {
		t.Error("a nil schema prunes nothing")
	}
}
