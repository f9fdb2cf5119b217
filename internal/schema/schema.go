// Package schema compares the OpenAPI v3 schemas of CustomResourceDefinition
// versions the way the API server uses them: for structural equality and for
// pruning (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning).
//
// All functions are pure: they never modify their arguments.
package schema

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

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
//
// Each node is compared once, as JSON without its subschemas, and the
// subschemas are compared in turn: the time is linear in the size of the
// schemas, however deep they nest (a JSON round trip of the whole schema
// is not: encoding/json re-reads the output of the MarshalJSON of every
// nested items and additionalProperties, quadratic in their depth).
func Equal(a, b *apiextensionsv1.JSONSchemaProps) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return equalNode(a, b) &&
		equalOrArray(a.Items, b.Items) &&
		equalList(a.AllOf, b.AllOf) && equalList(a.OneOf, b.OneOf) && equalList(a.AnyOf, b.AnyOf) &&
		Equal(a.Not, b.Not) &&
		equalMap(a.Properties, b.Properties) &&
		equalOrBool(a.AdditionalProperties, b.AdditionalProperties) &&
		equalMap(a.PatternProperties, b.PatternProperties) &&
		equalDependencies(a.Dependencies, b.Dependencies) &&
		equalOrBool(a.AdditionalItems, b.AdditionalItems) &&
		equalMap(a.Definitions, b.Definitions)
}

// equalNode compares the keywords of a and b but their subschemas and
// documentation, as JSON (so nil and empty lists, and the key order of
// JSON values, do not count).
func equalNode(a, b *apiextensionsv1.JSONSchemaProps) bool {
	na, nb := node(a), node(b)
	if reflect.DeepEqual(na, nb) {
		return true
	}
	return reflect.DeepEqual(asJSON(&na), asJSON(&nb))
}

// node is s without its subschemas and documentation: a shallow copy that
// shares the rest with s, which is never changed.
func node(s *apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	c := *s
	c.Description, c.Title, c.Example, c.ExternalDocs = "", "", nil, nil
	c.Items, c.AllOf, c.OneOf, c.AnyOf, c.Not = nil, nil, nil, nil, nil
	c.Properties, c.AdditionalProperties, c.PatternProperties = nil, nil, nil
	c.Dependencies, c.AdditionalItems, c.Definitions = nil, nil, nil
	return c
}

func asJSON(s *apiextensionsv1.JSONSchemaProps) any {
	raw, err := json.Marshal(s)
	if err != nil {
		// JSONSchemaProps always marshals; keep the comparison total anyway.
		return err.Error()
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err.Error()
	}
	return v
}

// equalOrArray compares two items as their JSON compares: absent, one
// schema (null when it has none), or a list of schemas.
func equalOrArray(a, b *apiextensionsv1.JSONSchemaPropsOrArray) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case len(a.JSONSchemas) > 0 || len(b.JSONSchemas) > 0:
		return equalList(a.JSONSchemas, b.JSONSchemas)
	}
	return Equal(a.Schema, b.Schema)
}

// equalOrBool compares two additionalProperties (or additionalItems) as
// their JSON compares: absent, a schema, or true or false.
func equalOrBool(a, b *apiextensionsv1.JSONSchemaPropsOrBool) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case a.Schema != nil || b.Schema != nil:
		return Equal(a.Schema, b.Schema)
	}
	return a.Allows == b.Allows
}

func equalList(a, b []apiextensionsv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func equalMap(a, b map[string]apiextensionsv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !Equal(&av, &bv) {
			return false
		}
	}
	return true
}

// equalDependencies compares two dependencies as their JSON compares: each
// a list of property names, a schema, or null.
func equalDependencies(a, b apiextensionsv1.JSONSchemaDependencies) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		switch {
		case !ok:
			return false
		case len(av.Property) > 0 || len(bv.Property) > 0:
			if !slices.Equal(av.Property, bv.Property) {
				return false
			}
		case !Equal(av.Schema, bv.Schema):
			return false
		}
	}
	return true
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
	return slices.Sorted(maps.Keys(Defaults(s)))
}

// Defaults are the defaults s declares, by the path of the field each
// defaults (DefaultPaths' notation), each as its JSON. A path that
// subschemas (allOf, anyOf, oneOf) default again holds the last.
func Defaults(s *apiextensionsv1.JSONSchemaProps) map[string]string {
	out := map[string]string{}
	eachPath(s, "", func(s *apiextensionsv1.JSONSchemaProps, path string) {
		if s.Default != nil {
			out[orRoot(path)] = string(s.Default.Raw)
		}
	})
	return out
}

// eachPath calls visit with s and every subschema under it, each with its
// field path (DefaultPaths' notation, "" for the root): properties,
// items, additionalProperties, and allOf/anyOf/oneOf at their parent's
// path.
func eachPath(s *apiextensionsv1.JSONSchemaProps, path string, visit func(s *apiextensionsv1.JSONSchemaProps, path string)) {
	if s == nil {
		return
	}
	visit(s, path)
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		eachPath(&p, path+"."+k, visit)
	}
	if s.Items != nil {
		eachPath(s.Items.Schema, path+"[*]", visit)
		for i := range s.Items.JSONSchemas {
			eachPath(&s.Items.JSONSchemas[i], path+"[*]", visit)
		}
	}
	if s.AdditionalProperties != nil {
		eachPath(s.AdditionalProperties.Schema, path+".*", visit)
	}
	for _, group := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range group {
			eachPath(&group[i], path, visit)
		}
	}
}

// Nullable is every field path s declares (DefaultPaths' notation), each
// with whether the field is nullable there. A path that subschemas
// (allOf, anyOf, oneOf) declare again is nullable when any says so.
func Nullable(s *apiextensionsv1.JSONSchemaProps) map[string]bool {
	out := map[string]bool{}
	eachPath(s, "", func(s *apiextensionsv1.JSONSchemaProps, path string) {
		out[orRoot(path)] = out[orRoot(path)] || s.Nullable
	})
	return out
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// TransitionRules are the x-kubernetes-validations rules of s, at any depth,
// that name oldSelf: transition rules, which the API server evaluates on an
// update, a no-op rewrite included, without the ratcheting that lets an
// update keep an unchanged value that other validation now refuses. A rule
// whose text holds "oldSelf" anywhere counts.
func TransitionRules(s *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	var walk func(s *apiextensionsv1.JSONSchemaProps)
	walk = func(s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		for _, r := range s.XValidations {
			if strings.Contains(r.Rule, "oldSelf") {
				out = append(out, r.Rule)
			}
		}
		for _, k := range sortedKeys(s.Properties) {
			p := s.Properties[k]
			walk(&p)
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
		if s.Items != nil {
			walk(s.Items.Schema)
			for i := range s.Items.JSONSchemas {
				walk(&s.Items.JSONSchemas[i])
			}
		}
		for _, l := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
			for i := range l {
				walk(&l[i])
			}
		}
		walk(s.Not)
	}
	walk(s)
	return out
}
