package schema

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(y), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEqual(t *testing.T) {
	base := `
type: object
properties:
  spec:
    type: object
    description: The spec.
    properties:
      description: {type: string, description: a field named description}
      size: {type: integer, default: 3, minimum: 1}
      mode: {type: string, enum: [a, b]}
      tpl: {type: object, default: {x: 1, y: 2}}
`
	cases := []struct {
		name  string
		other string
		equal bool
	}{
		{"identical", base, true},
		{"docs differ", strings.NewReplacer("The spec.", "Other words.", "a field named description", "x").Replace(base) + "title: T\nexample: {a: 1}\n", true},
		{"default key order differs", strings.Replace(base, "{x: 1, y: 2}", "{y: 2, x: 1}", 1), true},
		{"default differs", strings.Replace(base, "default: 3", "default: 4", 1), false},
		{"minimum differs", strings.Replace(base, "minimum: 1", "minimum: 2", 1), false},
		{"enum value removed", strings.Replace(base, "[a, b]", "[a]", 1), false},
		{"a property named description removed", strings.Replace(base, "      description: {type: string, description: a field named description}\n", "", 1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Equal(parse(t, base), parse(t, tc.other)); got != tc.equal {
				t.Errorf("Equal = %v, want %v", got, tc.equal)
			}
		})
	}
	if !Equal(nil, nil) || Equal(nil, parse(t, base)) {
		t.Error("nil handling")
	}
}

func TestPrunedFields(t *testing.T) {
	from := parse(t, `
type: object
properties:
  apiVersion: {type: string}
  metadata: {type: object}
  spec:
    type: object
    properties:
      url: {type: string}
      interval: {type: string}
      containers:
        type: array
        items:
          type: object
          properties:
            name: {type: string}
            image: {type: string}
      labels:
        type: object
        additionalProperties: {type: object, properties: {value: {type: string}, note: {type: string}}}
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
      dotted.name: {type: string}
`)
	cases := []struct {
		name string
		to   string
		want string
	}{
		{"same schema", "", ""},
		{"fields removed at several depths", `
type: object
properties:
  spec:
    type: object
    properties:
      url: {type: string}
      containers: {type: array, items: {type: object, properties: {name: {type: string}}}}
      labels: {type: object, additionalProperties: {type: object, properties: {value: {type: string}}}}
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, ".spec.containers[*].image .spec.interval .spec.labels.*.note .spec['dotted.name']"},
		{"preserve-unknown-fields keeps everything below", `
type: object
properties:
  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, ""},
		{"additionalProperties true keeps values", `
type: object
properties:
  spec: {type: object, additionalProperties: true}
`, ""},
		{"whole spec gone", `
type: object
properties:
  status: {type: object}
`, ".spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to := from
			if tc.to != "" {
				to = parse(t, tc.to)
			}
			if got := strings.Join(PrunedFields(from, to), " "); got != tc.want {
				t.Errorf("PrunedFields = %q\nwant %q", got, tc.want)
			}
		})
	}
	if PrunedFields(nil, from) != nil || PrunedFields(from, nil) != nil {
		t.Error("a nil schema must prune nothing")
	}
}

func TestDefaultPaths(t *testing.T) {
	one := &apiextensionsv1.JSON{Raw: []byte("1")}
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer", Default: one},
			"image":    {Type: "string"},
			"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"protocol": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"TCP"`)}}},
			}}},
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`""`)}}}},
		}},
	}}
	got := strings.Join(DefaultPaths(s), " ")
	if want := ".spec.labels.* .spec.ports[*].protocol .spec.replicas"; got != want {
		t.Errorf("DefaultPaths = %q, want %q", got, want)
	}
	if got := DefaultPaths(&apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}); len(got) != 0 {
		t.Errorf("no defaults: %v", got)
	}
	if got := DefaultPaths(nil); len(got) != 0 {
		t.Errorf("nil schema: %v", got)
	}
}

func ptrTrue() *bool { b := true; return &b }
