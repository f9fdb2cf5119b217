package schema

import (
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
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

// jsonEqual is Equal as it was, by a JSON round trip of both schemas
// whole, documentation stripped: the oracle of TestEqualMatchesJSON.
func jsonEqual(a, b *apiextensionsv1.JSONSchemaProps) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	norm := func(s *apiextensionsv1.JSONSchemaProps) any {
		v := asJSON(s)
		var strip func(node any)
		strip = func(node any) {
			m, ok := node.(map[string]any)
			if !ok {
				return
			}
			for _, k := range []string{"description", "title", "example", "externalDocs"} {
				delete(m, k)
			}
			for _, k := range []string{"items", "additionalProperties", "additionalItems", "not"} {
				strip(m[k])
			}
			for _, k := range []string{"allOf", "anyOf", "oneOf", "items"} {
				list, _ := m[k].([]any)
				for _, it := range list {
					strip(it)
				}
			}
			for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
				children, _ := m[k].(map[string]any)
				for _, c := range children {
					strip(c)
				}
			}
		}
		strip(v)
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// TestEqualMatchesJSON: Equal, which compares node by node, answers as a
// JSON round trip of the whole schemas does, for every pair of schemas of
// the same CRD in testdata/crds (its releases and versions) and for the
// cases where the JSON of a node is not its Go value (nil and empty,
// items, additionalProperties and dependencies in each of their forms).
func TestEqualMatchesJSON(t *testing.T) {
	byCRD := map[string][]*apiextensionsv1.JSONSchemaProps{}
	for _, crd := range testdataCRDs(t) {
		for i := range crd.Spec.Versions {
			byCRD[crd.Name] = append(byCRD[crd.Name], Of(&crd.Spec.Versions[i]))
		}
	}
	pairs, equal := 0, 0
	for name, schemas := range byCRD {
		for _, a := range schemas {
			for _, b := range schemas {
				pairs++
				got, want := Equal(a, b), jsonEqual(a, b)
				if got != want {
					t.Errorf("%s: Equal = %v, the JSON round trip says %v", name, got, want)
				}
				if got {
					equal++
				}
			}
		}
	}
	if equal == pairs || equal == 0 {
		t.Errorf("%d of %d pairs equal: the corpus tests one answer only", equal, pairs)
	}

	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	doc := apiextensionsv1.JSONSchemaProps{Type: "string", Description: "words"}
	forms := []*apiextensionsv1.JSONSchemaProps{
		{},
		{Type: "object"},
		{Type: "object", Required: []string{}},
		{Type: "object", Required: []string{"a"}},
		{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}},
		{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": str}},
		{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": doc}},
		{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"b": str}},
		{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{}},
		{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}},
		{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
		{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: false, Schema: &doc}},
		{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{}}},
		{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{}},
		{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
		{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &doc}},
		{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{}}},
		{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{str}}},
		{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str, JSONSchemas: []apiextensionsv1.JSONSchemaProps{doc}}},
		{AllOf: []apiextensionsv1.JSONSchemaProps{}},
		{AllOf: []apiextensionsv1.JSONSchemaProps{str}},
		{AnyOf: []apiextensionsv1.JSONSchemaProps{doc}},
		{OneOf: []apiextensionsv1.JSONSchemaProps{str, str}},
		{Not: &str},
		{Not: &doc},
		{Dependencies: apiextensionsv1.JSONSchemaDependencies{"a": {}}},
		{Dependencies: apiextensionsv1.JSONSchemaDependencies{"a": {Property: []string{"b"}}}},
		{Dependencies: apiextensionsv1.JSONSchemaDependencies{"a": {Property: []string{"b"}, Schema: &str}}},
		{Dependencies: apiextensionsv1.JSONSchemaDependencies{"a": {Schema: &doc}}},
		{Dependencies: apiextensionsv1.JSONSchemaDependencies{"a": {Property: []string{}, Schema: &str}}},
		{AdditionalItems: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}},
		{AdditionalItems: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
		{PatternProperties: map[string]apiextensionsv1.JSONSchemaProps{"^a": doc}},
		{Definitions: apiextensionsv1.JSONSchemaDefinitions{"a": str}},
		{Definitions: apiextensionsv1.JSONSchemaDefinitions{}},
		{Type: "string", Enum: []apiextensionsv1.JSON{}},
		{Type: "object", Default: &apiextensionsv1.JSON{Raw: []byte(`{"a":1,"b":2}`)}},
		{Type: "object", Default: &apiextensionsv1.JSON{Raw: []byte(`{"b":2,"a":1}`)}},
		{Type: "string", XListMapKeys: []string{}},
		{Type: "string", XPreserveUnknownFields: new(bool)},
	}
	for i, a := range forms {
		for j, b := range forms {
			if got, want := Equal(a, b), jsonEqual(a, b); got != want {
				t.Errorf("forms %d and %d: Equal = %v, the JSON round trip says %v", i, j, got, want)
			}
		}
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
		{"additionalProperties true keeps scalar values but empties objects", `
type: object
properties:
  spec: {type: object, additionalProperties: true}
`, ".spec.containers[*].image .spec.containers[*].name .spec.labels.* .spec.raw.*"},
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

// TestPruneClasses covers each way stored data reaches a path the new
// schema prunes (B1 of the 2026-12-01 preflight holes: the walk over the
// old schema's declared fields missed all but the first).
func TestPruneClasses(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           string // paths and reasons, "path=Reason" joined by spaces
	}{
		{"preserve-unknown-fields at .spec, fixed properties in new; map to struct (the reproduction)", `
type: object
properties:
  spec:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      replicas: {type: integer}
      labels: {type: object, additionalProperties: {type: string}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer}
      labels: {type: object, properties: {team: {type: string}}}
`, ".spec.*=PreserveUnknownFieldsRemoved .spec.labels.*=MapEntriesRemoved"},
		{"preserve-unknown-fields at the root", `
type: object
x-kubernetes-preserve-unknown-fields: true
`, `
type: object
properties:
  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, ".*=PreserveUnknownFieldsRemoved"},
		{"preserve-unknown-fields two levels down and in list items", `
type: object
properties:
  spec:
    type: object
    properties:
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
      steps:
        type: array
        items: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {name: {type: string}}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      raw: {type: object, properties: {a: {type: string}}}
      steps: {type: array, items: {type: object, properties: {name: {type: string}}}}
`, // An unknown .spec.raw.a may be an object or a list of objects:
			// the new string schema empties them.
			".spec.raw.*=PreserveUnknownFieldsRemoved .spec.raw.a.*=UntypedValuesPruned .spec.raw.a[*].**=UntypedValuesPruned .spec.steps[*].*=PreserveUnknownFieldsRemoved"},
		{"new keeps unknown fields but declares one of them as a struct", `
type: object
properties:
  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, `
type: object
properties:
  spec:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      tpl: {type: object, properties: {a: {type: string}}}
      items: {type: array, items: {type: object, properties: {b: {type: string}}}}
`, // unknown data of any type at .spec.tpl and .spec.items: a null is
			// pruned, and what does not fit the new structure
			".spec.items=NullPruned .spec.items.*=UntypedValuesPruned .spec.items[*].*=UntypedValuesPruned .spec.items[*].b.*=UntypedValuesPruned .spec.items[*].b[*].**=UntypedValuesPruned .spec.items[*][*].**=UntypedValuesPruned .spec.tpl=NullPruned .spec.tpl.*=UntypedValuesPruned .spec.tpl.a.*=UntypedValuesPruned .spec.tpl.a[*].**=UntypedValuesPruned .spec.tpl[*].**=UntypedValuesPruned"},
		{"preserve-unknown-fields kept below, nothing lost", `
type: object
properties:
  spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}
`, `
type: object
properties:
  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, ""},
		{"a list of preserving objects keeps unknown fields in its items", `
type: object
properties:
  spec:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      l: {type: array, items: {type: object, properties: {a: {type: string}}}}
`, `
type: object
properties:
  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, ""},
		{"map of objects to map of smaller objects, and map of objects to struct", `
type: object
properties:
  spec:
    type: object
    properties:
      m: {type: object, additionalProperties: {type: object, properties: {a: {type: string}, b: {type: string}}}}
      o: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      m: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}
      o: {type: object, properties: {x: {type: object, properties: {a: {type: string}}}}}
`, ".spec.m.*.b=FieldRemoved .spec.o.*=MapEntriesRemoved"},
		{"map values that preserve unknown fields, read as a map of structs", `
type: object
properties:
  spec:
    type: object
    properties:
      m: {type: object, additionalProperties: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      m: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}
`, ".spec.m.*.*=PreserveUnknownFieldsRemoved .spec.m.*.a.*=UntypedValuesPruned .spec.m.*.a[*].**=UntypedValuesPruned"},
		{"embedded resource no longer embedded", `
type: object
properties:
  spec:
    type: object
    properties:
      template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      template: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {metadata: {type: object, properties: {name: {type: string}}}}}
`, ".spec.template.metadata.*=EmbeddedResourceChanged"},
		{"embedded resource to a plain struct", `
type: object
properties:
  spec:
    type: object
    properties:
      template: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object}}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      template: {type: object, properties: {spec: {type: object}}}
`, ".spec.template.apiVersion=EmbeddedResourceChanged .spec.template.kind=EmbeddedResourceChanged .spec.template.metadata=EmbeddedResourceChanged"},
		{"embedded resource kept", `
type: object
properties:
  spec: {type: object, properties: {t: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}
`, `
type: object
properties:
  spec: {type: object, properties: {t: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}
`, ""},
		{"int-or-string widened, narrowed, and an object read as int-or-string", `
type: object
properties:
  spec:
    type: object
    properties:
      port: {x-kubernetes-int-or-string: true}
      size: {type: integer}
      target: {type: object, properties: {a: {type: string}, b: {type: string}}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      port: {type: object, properties: {a: {type: string}}}
      size: {x-kubernetes-int-or-string: true}
      target: {x-kubernetes-int-or-string: true}
`, ".spec.target.a=FieldRemoved .spec.target.b=FieldRemoved"},
		{"nullable removed, with and without a default", `
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string, nullable: true}
      b: {type: string, nullable: true}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      b: {type: string, default: x}
`, ".spec.a=NullPruned"},
		{"a type change of a scalar prunes nothing", `
type: object
properties:
  spec: {type: object, properties: {a: {type: string}}}
`, `
type: object
properties:
  spec: {type: object, properties: {a: {type: object, properties: {b: {type: string}}}}}
`, ""},
		{"anyOf and allOf do not keep fields", `
type: object
properties:
  spec: {type: object, properties: {a: {type: string}, b: {type: string}}}
`, `
type: object
properties:
  spec:
    type: object
    properties: {a: {type: string}}
    anyOf: [{required: [a]}, {required: [b]}]
    allOf: [{properties: {a: {minLength: 1}}}]
`, ".spec.b=FieldRemoved"},
		{"lists of maps of objects", `
type: object
properties:
  spec:
    type: object
    properties:
      l:
        type: array
        items: {type: object, additionalProperties: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}}
`, `
type: object
properties:
  spec:
    type: object
    properties:
      l:
        type: array
        items: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}
`, ".spec.l[*].*.*=PreserveUnknownFieldsRemoved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Prune(parse(t, tc.from), parse(t, tc.to)) {
				got = append(got, p.Path+"="+string(p.Reason))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("Prune =\n  %s\nwant\n  %s", g, tc.want)
			}
			// What a schema stored, it keeps: the API server prunes
			// on every write as on reads.
			for _, y := range []string{tc.from, tc.to} {
				if got := Prune(parse(t, y), parse(t, y)); len(got) != 0 {
					t.Errorf("a schema prunes its own objects: %v", got)
				}
			}
		})
	}
}

// TestPruneBySameSchemaIsEmpty: for every schema of the repository's CRD
// corpus, what it stored it keeps.
func TestPruneBySameSchemaIsEmpty(t *testing.T) {
	for _, crd := range testdataCRDs(t) {
		for i := range crd.Spec.Versions {
			s := Of(&crd.Spec.Versions[i])
			if got := Prune(s, s); len(got) != 0 {
				t.Errorf("%s %s prunes its own objects: %v", crd.Name, crd.Spec.Versions[i].Name, got)
			}
		}
	}
}

// testdataCRDs are the CRDs of the repository's corpus, testdata/crds (a
// CRD a file).
func testdataCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob("../../testdata/crds/*/*/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under testdata/crds: %v", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, crd)
	}
	return out
}

func TestCovers(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{".spec.*", ".spec.image", true},
		{".spec.*", ".spec.extra.deep", false},
		{".spec.labels.*", ".spec.labels['app.kubernetes.io/name']", true},
		{".spec.l[*].*.b", ".spec.l[3].x.b", true},
		{".spec.l[*].*.b", ".spec.l.x.b", false},
		{".spec.*", ".spec[0]", false},
		{".spec['*']", ".spec.a", false},
		{".spec['dotted.name']", ".spec['dotted.name']", true},
		{".spec.a", ".spec.b", false},
		{".spec.l[*].**", ".spec.l[1][0].x", true},
		{".spec.l[*].**", ".spec.l[1]", false},
	}
	for _, tc := range cases {
		if got := Covers(tc.pattern, tc.path); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

// TestUncoveredMatchesPairs: uncovered, which matches the paths against
// a tree of their steps, keeps the paths that comparing every pair with
// Covers keeps, on random sets of paths of the shapes Prune records.
func TestUncoveredMatchesPairs(t *testing.T) {
	pairwise := func(found map[string]Reason) []string {
		var out []string
		for p := range found {
			covered := false
			for q := range found {
				if q != p && strings.Contains(q, ".*") && Covers(q, p) {
					covered = true
					break
				}
			}
			if !covered {
				out = append(out, p)
			}
		}
		sort.Strings(out)
		return out
	}
	stepsOf := []string{".a", ".b", ".*", "[*]", "[0]", "['x.y']"}
	rng := rand.New(rand.NewPCG(25, 1))
	for round := range 2000 {
		found := map[string]Reason{}
		for range 1 + rng.IntN(12) {
			var b strings.Builder
			for range 1 + rng.IntN(5) {
				b.WriteString(stepsOf[rng.IntN(len(stepsOf))])
			}
			if rng.IntN(6) == 0 {
				b.WriteString(".**")
			}
			found[b.String()] = ReasonUndeclared
		}
		got := uncovered(found)
		sort.Strings(got)
		if want := pairwise(found); !slices.Equal(got, want) {
			t.Fatalf("round %d, paths %v:\n uncovered %v\n pairwise  %v", round, slices.Sorted(maps.Keys(found)), got, want)
		}
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

func TestKeeps(t *testing.T) {
	tr := true
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"image":  {Type: "string"},
			"ports":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}}}}},
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			"free":   {Type: "object", XPreserveUnknownFields: &tr},
			"tmpl":   {Type: "object", XEmbeddedResource: true, Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object"}}},
		}},
	}}
	for path, want := range map[string]bool{
		".spec.image": true, ".spec.legacy": false, ".spec.ports[*].name": true, ".spec.ports[0].x": false,
		".spec.labels.env": true, ".spec['a.b/c']": false, ".spec.labels['a.b/c']": true, ".spec.free.anything.below": true,
		".metadata.labels.x": true, ".apiVersion": true, ".spec.tmpl.metadata.name": true, ".spec.tmpl.other": false, ".status.x": false,
	} {
		if got := Keeps(s, path); got != want {
			t.Errorf("Keeps(%s) = %v, want %v", path, got, want)
		}
	}
	if !Keeps(nil, ".spec.anything") {
		t.Error("no schema prunes nothing")
	}
}

func TestDefaultsAndTransitionRules(t *testing.T) {
	s := parse(t, `type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "self.size >= oldSelf.size"
    - rule: "has(self.size)"
    properties:
      size: {type: integer, default: 3}
      mode: {type: string, default: "fast"}
      ports:
        type: array
        items:
          type: object
          x-kubernetes-validations: [{rule: "!has(oldSelf.name) || self.name == oldSelf.name"}]
          properties: {protocol: {type: string, default: TCP}}
`)
	got := Defaults(s)
	want := map[string]string{".spec.size": "3", ".spec.mode": `"fast"`, ".spec.ports[*].protocol": `"TCP"`}
	if !maps.Equal(got, want) {
		t.Errorf("Defaults = %v, want %v", got, want)
	}
	rules := TransitionRules(s)
	if want := []string{"self.size >= oldSelf.size", "!has(oldSelf.name) || self.name == oldSelf.name"}; !slices.Equal(rules, want) {
		t.Errorf("TransitionRules = %q, want %q", rules, want)
	}
	if len(TransitionRules(nil)) != 0 || len(Defaults(nil)) != 0 {
		t.Error("a nil schema has rules or defaults")
	}
}

// TestNullable: every declared path, nullable where the field says so —
// nested properties, list items, map values, and a path that a subschema
// (allOf) makes nullable again.
func TestNullable(t *testing.T) {
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"opt":   {Type: "string", Nullable: true},
			"plain": {Type: "string"},
			"list":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Nullable: true}}},
			"map":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			"both":  {Type: "string", AllOf: []apiextensionsv1.JSONSchemaProps{{Nullable: true}}},
		}},
	}}
	want := map[string]bool{".": false, ".spec": false, ".spec.opt": true, ".spec.plain": false, ".spec.list": false,
		".spec.list[*]": true, ".spec.map": false, ".spec.map.*": false, ".spec.both": true}
	if got := Nullable(s); !maps.Equal(got, want) {
		t.Errorf("Nullable = %v, want %v", got, want)
	}
}
