package schema

import "fmt"

// MaxDepth is the deepest schema kubectl crdversion reads from a file: a
// version's openAPIV3Schema (level 1) whose subschemas (properties, items,
// additionalProperties, allOf, anyOf, oneOf, not, …) nest more than
// MaxDepth levels is refused with a *DepthError, before any of it is
// decoded into the apiextensions types or compared.
//
// The API server's own limit is its JSON decoder's: kube-apiserver v1.37
// decodes request bodies with sigs.k8s.io/json, which refuses JSON nested
// more than 10000 levels (maxNestingDepth of its scanner; the maxDepth of
// k8s.io/apimachinery/pkg/util/json is the same), in bodies of at most
// 3 MiB (MaxRequestBodyBytes, k8s.io/apiserver/pkg/server/config.go).
// apiextensions-apiserver's validation of structural schemas sets no depth
// of its own. The openAPIV3Schema sits 6 levels deep in a CRD's JSON and a
// field nested through properties takes two more, so no CRD the API server
// accepts has fields nested more than 4998 levels through properties (9995
// through items or additionalProperties, which take one).
//
// MaxDepth is a fifth of that, and 50 times the deepest of the 626 schemas
// of the shared CRD corpus (19 levels, cert-manager's Issuer v1alpha2): it
// refuses no real CRD, and it bounds what the depth costs outside this
// package's walks, which are linear: the apiextensions types decode
// JSONSchemaPropsOrArray and JSONSchemaPropsOrBool by re-reading the rest
// of the schema at every items and additionalProperties level, quadratic
// in the depth (a fraction of a second at 1000 levels, seconds at 5000),
// and each finding's path is as long as its depth.
const MaxDepth = 1000

// DepthError is a schema nested deeper than MaxDepth.
type DepthError struct {
	// CRD and Version name the schema.
	CRD, Version string
	// Depth is how many levels it nests.
	Depth int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("%s version %s: the schema is nested %d levels deep, more than the %d kubectl crdversion reads", e.CRD, e.Version, e.Depth, MaxDepth)
}

// DecodedDepth returns how many levels deep a schema nests, given as a
// YAML or JSON decoder returns it (map[string]any): 1 for a schema
// without subschemas, one more for each level of properties,
// patternProperties, definitions, dependencies, items, additionalItems,
// additionalProperties, not, allOf, anyOf and oneOf; 0 for a value that is
// not a schema. It reads every node once.
func DecodedDepth(node any) int {
	m, ok := node.(map[string]any)
	if !ok {
		return 0
	}
	below := 0
	for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
		children, _ := m[k].(map[string]any)
		for _, c := range children {
			below = max(below, DecodedDepth(c))
		}
	}
	for _, k := range []string{"items", "additionalItems", "additionalProperties", "not"} {
		below = max(below, DecodedDepth(m[k]))
	}
	for _, k := range []string{"items", "allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, c := range list {
			below = max(below, DecodedDepth(c))
		}
	}
	return 1 + below
}
