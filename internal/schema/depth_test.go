package schema

import (
	"encoding/json"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestDecodedDepth: a schema nested through any keyword, as a decoder
// returns it, is as deep as its levels, MaxDepth+1 included; what is not
// a schema has no depth.
func TestDecodedDepth(t *testing.T) {
	nestings := map[string][]crdtest.Nesting{
		"properties":           {crdtest.ThroughProperties},
		"items":                {crdtest.ThroughItems},
		"additionalProperties": {crdtest.ThroughAdditionalProperties},
		"each in turn":         {crdtest.ThroughProperties, crdtest.ThroughItems, crdtest.ThroughAdditionalProperties},
	}
	for name, through := range nestings {
		for _, depth := range []int{1, 2, 7, MaxDepth + 1} {
			var decoded any
			if err := json.Unmarshal(crdtest.NestedJSON(depth, apiextensionsv1.JSONSchemaProps{Type: "string"}, through...), &decoded); err != nil {
				t.Fatal(err)
			}
			if got := DecodedDepth(decoded); got != depth {
				t.Errorf("%s, %d levels: DecodedDepth = %d", name, depth, got)
			}
		}
	}
	for _, y := range []string{
		"{allOf: [{}, {not: {}}]}", "{anyOf: [{}]}", "{oneOf: [{}]}", "{not: {}}", "{items: [{}, {}]}",
		"{patternProperties: {'^a': {}}}", "{definitions: {a: {}}}", "{dependencies: {a: {}, b: [c]}}",
		"{additionalItems: {}}", "{additionalProperties: true, properties: {a: {}}}",
	} {
		var decoded any
		if err := yaml.Unmarshal([]byte(y), &decoded); err != nil {
			t.Fatal(err)
		}
		want := 2
		if y == "{allOf: [{}, {not: {}}]}" {
			want = 3
		}
		if got := DecodedDepth(decoded); got != want {
			t.Errorf("%s: DecodedDepth = %d, want %d", y, got, want)
		}
	}
	for _, v := range []any{nil, "x", []any{map[string]any{}}} {
		if got := DecodedDepth(v); got != 0 {
			t.Errorf("%v: DecodedDepth = %d, want 0", v, got)
		}
	}
	err := &DepthError{CRD: "deeps.example.com", Version: "v1", Depth: MaxDepth + 1}
	if want := fmt.Sprintf("deeps.example.com version v1: the schema is nested %d levels deep, more than the %d kubectl crdversion reads", MaxDepth+1, MaxDepth); err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
