package schema

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// PrunesWithin reports whether the API server, reading an object with
// schema s, can drop a field at or below path (Prune's notation, list
// elements as "[*]" or "[0]"): whether the schema there, or below it, has
// an object that neither declares every field nor preserves unknown ones
// (a closed object: properties without additionalProperties or
// x-kubernetes-preserve-unknown-fields). Only there can an older, wider
// schema have stored data that reads now hide. A path s does not keep, or
// one kept whole without a schema (below a node that preserves unknown
// fields, or not declared by a nil s), prunes nothing within.
func PrunesWithin(s *apiextensionsv1.JSONSchemaProps, path string) bool {
	cur := s
	for _, st := range steps(path) {
		if cur == nil {
			return false
		}
		switch {
		case strings.HasPrefix(st, "["):
			if cur.Items == nil || cur.Items.Schema == nil {
				return false
			}
			cur = cur.Items.Schema
		case strings.HasPrefix(st, "k:"):
			name := strings.TrimPrefix(st, "k:")
			if p, ok := cur.Properties[name]; ok {
				cur = &p
				continue
			}
			if ap := cur.AdditionalProperties; ap != nil && ap.Schema != nil {
				cur = ap.Schema
				continue
			}
			// Undeclared: kept whole (preserved) or pruned; either
			// way nothing below it is pruned on its own.
			return false
		default:
			return false
		}
	}
	return closedWithin(cur)
}

// closedWithin reports whether s or a schema below it is a closed object.
func closedWithin(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	ap := s.AdditionalProperties
	if (s.Type == "object" || len(s.Properties) > 0) && !preserves(s) && (ap == nil || ap.Schema == nil && !ap.Allows) {
		return true
	}
	for name := range s.Properties {
		p := s.Properties[name]
		if closedWithin(&p) {
			return true
		}
	}
	if ap != nil && closedWithin(ap.Schema) {
		return true
	}
	return s.Items != nil && closedWithin(s.Items.Schema)
}
