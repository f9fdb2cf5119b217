// Package schema compares the OpenAPI v3 schemas of CustomResourceDefinition
// versions the way the API server uses them: for structural equality and for
// pruning (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning).
//
// All functions are pure: they never modify their arguments.
package schema

import (
	"encoding/json"
	"reflect"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Of returns the OpenAPI v3 schema of a CRD version, or nil when it has none.
func Of(v *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v == nil || v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

// Equal reports whether two schemas validate, default and prune objects the
// same way. Documentation fields (description, title, example, externalDocs)
// do not count, nor does the key order of JSON values such as defaults and
// enums. Two nil schemas are equal; nil and non-nil are not.
func Equal(a, b *apiextensionsv1.JSONSchemaProps) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

// normalize returns the schema as generic JSON with documentation keys
// removed from every schema node. Property names are map keys under
// "properties" and are never removed.
func normalize(s *apiextensionsv1.JSONSchemaProps) any {
	raw, err := json.Marshal(s)
	if err != nil {
		// JSONSchemaProps always marshals; keep the comparison total anyway.
		return err.Error()
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err.Error()
	}
	stripDocs(v)
	return v
}

// schemaValuedKeys are the JSONSchemaProps keys whose value is one schema;
// schemaListKeys hold a list of schemas; schemaMapKeys a map of schemas.
var (
	schemaValuedKeys = []string{"items", "additionalProperties", "additionalItems", "not"}
	schemaListKeys   = []string{"allOf", "anyOf", "oneOf", "items"}
	schemaMapKeys    = []string{"properties", "patternProperties", "definitions", "dependencies"}
	docKeys          = []string{"description", "title", "example", "externalDocs"}
)

func stripDocs(node any) {
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	for _, k := range docKeys {
		delete(m, k)
	}
	for _, k := range schemaValuedKeys {
		stripDocs(m[k])
	}
	for _, k := range schemaListKeys {
		if list, ok := m[k].([]any); ok {
			for _, item := range list {
				stripDocs(item)
			}
		}
	}
	for _, k := range schemaMapKeys {
		if children, ok := m[k].(map[string]any); ok {
			for _, child := range children {
				stripDocs(child)
			}
		}
	}
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DefaultPaths lists the paths of s (".spec.replicas", ".spec.items[*].x")
// that declare a default, sorted. The API server rejects any of them while
// the CRD has spec.preserveUnknownFields: true ("must be false in order to
// use defaults in the schema").
func DefaultPaths(s *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	defaults(s, "", &out)
	sort.Strings(out)
	return out
}

func defaults(s *apiextensionsv1.JSONSchemaProps, path string, out *[]string) {
	if s == nil {
		return
	}
	if s.Default != nil {
		*out = append(*out, orRoot(path))
	}
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		defaults(&p, path+"."+k, out)
	}
	if s.Items != nil {
		defaults(s.Items.Schema, path+"[*]", out)
		for i := range s.Items.JSONSchemas {
			defaults(&s.Items.JSONSchemas[i], path+"[*]", out)
		}
	}
	if s.AdditionalProperties != nil {
		defaults(s.AdditionalProperties.Schema, path+".*", out)
	}
	for _, group := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range group {
			defaults(&group[i], path, out)
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}
