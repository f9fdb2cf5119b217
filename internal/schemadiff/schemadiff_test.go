package schemadiff

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

func parse(t *testing.T, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(y), s); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return s
}

// spec wraps the properties of .spec in an object schema.
func spec(props string) string {
	return "type: object\nproperties:\n  spec:\n" + indent(props, "    ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// want is "Code severity path".
func render(fs []Finding) []string {
	return renderBy(fs, func(f Finding) string { return f.Code })
}

// renderBy renders findings as "NAME severity path" (with " @version"),
// sorted, NAME what name gives (the code, the rule).
func renderBy(fs []Finding, name func(Finding) string) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		s := fmt.Sprintf("%s %s %s", name(f), f.Severity, f.Path)
		if f.Version != "" {
			s += " @" + f.Version
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func sorted(ss ...string) []string {
	out := append([]string{}, ss...)
	sort.Strings(out)
	return out
}

// propertyCases are tightenings (old -> new) with the findings both ways:
// forward is what objects written under old meet under new, backward the
// reverse (loosening, or the same change undone).
var propertyCases = []struct {
	name          string
	old, new      string
	forward, back []string
}{
	{"field removed",
		spec("type: object\nproperties:\n  a: {type: string}\n  b: {type: string}"),
		spec("type: object\nproperties:\n  a: {type: string}"),
		[]string{"FieldRemoved error .spec.b"}, []string{"FieldAdded info .spec.b"}},
	{"field removed where unknown fields are preserved",
		spec("type: object\nproperties:\n  a: {type: string}\n  b: {type: string}"),
		spec("type: object\nx-kubernetes-preserve-unknown-fields: true\nproperties:\n  a: {type: string}"),
		[]string{"FieldRemoved info .spec.b", "PreserveUnknownFieldsAdded info .spec"},
		// an unknown .spec.b may be an object, or a list of objects: the
		// new string schema empties them
		[]string{"FieldAdded info .spec.b", "PreserveUnknownFieldsRemoved error .spec", "PreserveUnknownFieldsRemoved error .spec.b.*", "PreserveUnknownFieldsRemoved error .spec.b[*].**"}},
	{"type changed",
		spec("type: object\nproperties:\n  a: {type: string}"),
		spec("type: object\nproperties:\n  a: {type: integer}"),
		[]string{"TypeChanged error .spec.a"}, []string{"TypeChanged error .spec.a"}},
	{"type widened to int-or-string",
		spec("type: object\nproperties:\n  a: {type: string}"),
		spec("type: object\nproperties:\n  a: {x-kubernetes-int-or-string: true}"),
		[]string{"TypeChanged info .spec.a"}, []string{"TypeChanged error .spec.a"}},
	{"newly required",
		spec("type: object\nproperties:\n  a: {type: string}"),
		spec("type: object\nrequired: [a]\nproperties:\n  a: {type: string}"),
		[]string{"RequiredAdded error .spec.a"}, []string{"RequiredRemoved info .spec.a"}},
	{"enum values removed",
		spec("type: object\nproperties:\n  a: {type: string, enum: [x, y]}"),
		spec("type: object\nproperties:\n  a: {type: string, enum: [x]}"),
		[]string{"EnumValuesRemoved warning .spec.a"}, []string{"EnumValuesAdded info .spec.a"}},
	{"enum introduced",
		spec("type: object\nproperties:\n  a: {type: string}"),
		spec("type: object\nproperties:\n  a: {type: string, enum: [x]}"),
		[]string{"EnumValuesRemoved warning .spec.a"}, []string{"EnumValuesAdded info .spec.a"}},
	{"default added",
		spec("type: object\nproperties:\n  a: {type: integer}"),
		spec("type: object\nproperties:\n  a: {type: integer, default: 3}"),
		[]string{"DefaultAdded info .spec.a"}, []string{"DefaultChanged warning .spec.a"}},
	{"default changed",
		spec("type: object\nproperties:\n  a: {type: integer, default: 3}"),
		spec("type: object\nproperties:\n  a: {type: integer, default: 4}"),
		[]string{"DefaultChanged warning .spec.a"}, []string{"DefaultChanged warning .spec.a"}},
	{"minimum raised",
		spec("type: object\nproperties:\n  a: {type: integer, minimum: 1}"),
		spec("type: object\nproperties:\n  a: {type: integer, minimum: 2}"),
		[]string{"MinimumTightened warning .spec.a"}, []string{"MinimumLoosened info .spec.a"}},
	{"maximum lowered",
		spec("type: object\nproperties:\n  a: {type: integer, maximum: 10}"),
		spec("type: object\nproperties:\n  a: {type: integer, maximum: 5}"),
		[]string{"MaximumTightened warning .spec.a"}, []string{"MaximumLoosened info .spec.a"}},
	{"exclusive bounds and multipleOf",
		spec("type: object\nproperties:\n  a: {type: number, minimum: 0, maximum: 9, multipleOf: 2}"),
		spec("type: object\nproperties:\n  a: {type: number, minimum: 0, maximum: 9, exclusiveMinimum: true, exclusiveMaximum: true, multipleOf: 4}"),
		[]string{"ExclusiveMinimumTightened warning .spec.a", "ExclusiveMaximumTightened warning .spec.a", "MultipleOfTightened warning .spec.a"},
		[]string{"ExclusiveMinimumLoosened info .spec.a", "ExclusiveMaximumLoosened info .spec.a", "MultipleOfLoosened info .spec.a"}},
	{"string lengths",
		spec("type: object\nproperties:\n  a: {type: string, maxLength: 63}"),
		spec("type: object\nproperties:\n  a: {type: string, minLength: 1, maxLength: 10}"),
		[]string{"MinLengthTightened warning .spec.a", "MaxLengthTightened warning .spec.a"},
		[]string{"MinLengthLoosened info .spec.a", "MaxLengthLoosened info .spec.a"}},
	{"list sizes and uniqueness",
		spec("type: object\nproperties:\n  a: {type: array, items: {type: string}}"),
		spec("type: object\nproperties:\n  a: {type: array, minItems: 1, maxItems: 8, uniqueItems: true, items: {type: string}}"),
		[]string{"MinItemsTightened warning .spec.a", "MaxItemsTightened warning .spec.a", "UniqueItemsTightened warning .spec.a"},
		[]string{"MinItemsLoosened info .spec.a", "MaxItemsLoosened info .spec.a", "UniqueItemsLoosened info .spec.a"}},
	{"map sizes",
		spec("type: object\nproperties:\n  a: {type: object, additionalProperties: {type: string}, maxProperties: 20}"),
		spec("type: object\nproperties:\n  a: {type: object, additionalProperties: {type: string}, minProperties: 1, maxProperties: 10}"),
		[]string{"MinPropertiesTightened warning .spec.a", "MaxPropertiesTightened warning .spec.a"},
		[]string{"MinPropertiesLoosened info .spec.a", "MaxPropertiesLoosened info .spec.a"}},
	{"pattern added",
		spec("type: object\nproperties:\n  a: {type: string}"),
		spec("type: object\nproperties:\n  a: {type: string, pattern: '^[a-z]+$'}"),
		[]string{"PatternTightened warning .spec.a"}, []string{"PatternLoosened info .spec.a"}},
	{"pattern replaced",
		spec("type: object\nproperties:\n  a: {type: string, pattern: '^[a-z]+$'}"),
		spec("type: object\nproperties:\n  a: {type: string, pattern: '^[a-z0-9]+$'}"),
		[]string{"PatternChanged warning .spec.a"}, []string{"PatternChanged warning .spec.a"}},
	{"format added",
		spec("type: object\nproperties:\n  a: {type: string}"),
		spec("type: object\nproperties:\n  a: {type: string, format: date-time}"),
		[]string{"FormatChanged warning .spec.a"}, []string{"FormatChanged info .spec.a"}},
	{"nullable removed",
		spec("type: object\nproperties:\n  a: {type: string, nullable: true}"),
		spec("type: object\nproperties:\n  a: {type: string}"),
		[]string{"NullableRemoved error .spec.a"}, []string{"NullableAdded info .spec.a"}},
	{"list type atomic to set",
		spec("type: object\nproperties:\n  a: {type: array, items: {type: string}}"),
		spec("type: object\nproperties:\n  a: {type: array, x-kubernetes-list-type: set, items: {type: string}}"),
		[]string{"ListTypeChanged warning .spec.a"}, []string{"ListTypeChanged warning .spec.a"}},
	{"list map keys reduced",
		spec("type: object\nproperties:\n  a:\n    type: array\n    x-kubernetes-list-type: map\n    x-kubernetes-list-map-keys: [name, port]\n    items: {type: object, required: [name, port], properties: {name: {type: string}, port: {type: integer}}}"),
		spec("type: object\nproperties:\n  a:\n    type: array\n    x-kubernetes-list-type: map\n    x-kubernetes-list-map-keys: [name]\n    items: {type: object, required: [name, port], properties: {name: {type: string}, port: {type: integer}}}"),
		[]string{"ListMapKeysChanged warning .spec.a"}, []string{"ListMapKeysChanged warning .spec.a"}},
	{"map type granular to atomic",
		spec("type: object\nproperties:\n  a: {type: object, additionalProperties: {type: string}}"),
		spec("type: object\nproperties:\n  a: {type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}"),
		[]string{"MapTypeChanged warning .spec.a"}, []string{"MapTypeChanged info .spec.a"}},
	{"unknown fields no longer preserved",
		spec("type: object\nproperties:\n  a: {type: object, x-kubernetes-preserve-unknown-fields: true}"),
		spec("type: object\nproperties:\n  a: {type: object}"),
		[]string{"PreserveUnknownFieldsRemoved error .spec.a"}, []string{"PreserveUnknownFieldsAdded info .spec.a"}},
	{"validation rule added",
		spec("type: object\nproperties:\n  a: {type: integer}"),
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 0'}]\nproperties:\n  a: {type: integer}"),
		[]string{"ValidationRulesAdded warning .spec"}, []string{"ValidationRulesRemoved info .spec"}},
	{"validation rule's expression changed",
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 0', message: positive}, {rule: 'self.a < 9'}]\nproperties:\n  a: {type: integer}"),
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 1', message: positive}, {rule: 'self.a < 9'}]\nproperties:\n  a: {type: integer}"),
		[]string{"ValidationRuleChanged warning .spec"}, []string{"ValidationRuleChanged warning .spec"}},
	{"validation rule changed into a transition rule, another removed",
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 0'}, {rule: 'self.a < 9'}]\nproperties:\n  a: {type: integer}"),
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a >= oldSelf.a'}]\nproperties:\n  a: {type: integer}"),
		[]string{"ValidationRuleChanged warning .spec", "ValidationRulesRemoved info .spec"}, []string{"ValidationRuleChanged warning .spec", "ValidationRulesAdded warning .spec"}},
	{"validation rule's message changed",
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 0', message: positive}]\nproperties:\n  a: {type: integer}"),
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 0', message: a must be positive, reason: FieldValueForbidden, fieldPath: .a}]\nproperties:\n  a: {type: integer}"),
		[]string{"ValidationMessageChanged info .spec"}, []string{"ValidationMessageChanged info .spec"}},
	{"transition rule's optionalOldSelf set",
		spec("type: object\nx-kubernetes-validations: [{rule: 'self.a >= oldSelf.a'}]\nproperties:\n  a: {type: integer}"),
		spec("type: object\nx-kubernetes-validations: [{rule: '!oldSelf.hasValue() || self.a >= oldSelf.value().a', optionalOldSelf: true}]\nproperties:\n  a: {type: integer}"),
		[]string{"ValidationRuleChanged warning .spec"}, []string{"ValidationRuleChanged warning .spec"}},
	{"oneOf changed",
		spec("type: object\nproperties:\n  a: {type: string}\n  b: {type: string}"),
		spec("type: object\noneOf: [{required: [a]}, {required: [b]}]\nproperties:\n  a: {type: string}\n  b: {type: string}"),
		[]string{"CompositionChanged warning .spec"}, []string{"CompositionChanged warning .spec"}},
	{"another keyword changed",
		spec("type: object\nproperties:\n  a: {type: object, x-kubernetes-preserve-unknown-fields: true}"),
		spec("type: object\nproperties:\n  a: {type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-embedded-resource: true}"),
		// Unknown fields named apiVersion, kind and metadata may hold
		// anything; an embedded resource keeps only strings and ObjectMeta.
		[]string{"SchemaChanged warning .spec.a", "FieldRemoved error .spec.a.apiVersion", "FieldRemoved error .spec.a.kind", "FieldRemoved error .spec.a.metadata", "FieldRemoved error .spec.a.metadata.*"},
		[]string{"SchemaChanged warning .spec.a"}},
	{"map values removed",
		spec("type: object\nproperties:\n  labels: {type: object, additionalProperties: {type: string}}"),
		spec("type: object\nproperties:\n  labels: {type: object}"),
		[]string{"FieldRemoved error .spec.labels.*"}, []string{"FieldAdded info .spec.labels.*"}},
	{"any map entries no longer allowed",
		spec("type: object\nproperties:\n  a: {type: object, additionalProperties: true}"),
		spec("type: object\nproperties:\n  a: {type: object, properties: {x: {type: string}}}"),
		[]string{"FieldRemoved error .spec.a.*", "FieldAdded info .spec.a.x"}, []string{"FieldAdded info .spec.a.*", "FieldRemoved info .spec.a.x"}},
	{"map value schema tightened",
		spec("type: object\nproperties:\n  labels: {type: object, additionalProperties: {type: string}}"),
		spec("type: object\nproperties:\n  labels: {type: object, additionalProperties: {type: string, maxLength: 63}}"),
		[]string{"MaxLengthTightened warning .spec.labels.*"}, []string{"MaxLengthLoosened info .spec.labels.*"}},
	{"list item field removed",
		spec("type: object\nproperties:\n  rules: {type: array, items: {type: object, properties: {name: {type: string}, port: {type: integer}}}}"),
		spec("type: object\nproperties:\n  rules: {type: array, items: {type: object, properties: {name: {type: string}}}}"),
		[]string{"FieldRemoved error .spec.rules[*].port"}, []string{"FieldAdded info .spec.rules[*].port"}},
	{"property name with a dot",
		spec("type: object\nproperties:\n  a.b: {type: string}"),
		spec("type: object\nproperties: {}"),
		[]string{"FieldRemoved error .spec['a.b']"}, []string{"FieldAdded info .spec['a.b']"}},
	{"status field newly required: a warning, the controller rewrites status",
		"type: object\nproperties:\n  status: {type: object, properties: {digest: {type: string}}}",
		"type: object\nproperties:\n  status: {type: object, required: [digest], properties: {digest: {type: string}}}",
		[]string{"RequiredAdded warning .status.digest"}, []string{"RequiredRemoved info .status.digest"}},
	{"descriptions only",
		spec("type: object\ndescription: one\nproperties:\n  a: {type: string, description: x}"),
		spec("type: object\ndescription: two\nproperties:\n  a: {type: string, description: y}"),
		nil, nil},
}

func TestSchemas(t *testing.T) {
	for _, tc := range propertyCases {
		t.Run(tc.name, func(t *testing.T) {
			old, new := parse(t, tc.old), parse(t, tc.new)
			if got := render(Schemas(old, new)); !slices.Equal(got, sorted(tc.forward...)) {
				t.Errorf("old -> new:\n got %q\nwant %q", got, sorted(tc.forward...))
			}
			if got := render(Schemas(new, old)); !slices.Equal(got, sorted(tc.back...)) {
				t.Errorf("new -> old:\n got %q\nwant %q", got, sorted(tc.back...))
			}
			for _, f := range Schemas(old, new) {
				if f.Message == "" {
					t.Errorf("%s at %s has no explanation", f.Code, f.Path)
				}
			}
		})
	}
}

// TestEveryPropertyCodeCovered keeps the table above complete: every code
// a property comparison can give appears in it in both directions (as the
// forward finding of one case and the backward finding of another, or of
// the same case for changes without a direction).
func TestEveryPropertyCodeCovered(t *testing.T) {
	codes := []string{CodeFieldRemoved, CodeFieldAdded, CodeTypeChanged, CodeRequiredAdded, CodeRequiredRemoved,
		CodeEnumValuesRemoved, CodeEnumValuesAdded, CodeDefaultChanged, CodeDefaultAdded, CodePatternChanged, CodeFormatChanged,
		CodeNullableRemoved, CodeNullableAdded, CodeListTypeChanged, CodeListMapKeysChanged, CodeMapTypeChanged,
		CodePreserveUnknownFieldsRemoved, CodePreserveUnknownFieldsAdded, CodeValidationRulesAdded, CodeValidationRulesRemoved,
		CodeValidationRuleChanged, CodeValidationMessageChanged, CodeCompositionChanged, CodeSchemaChanged}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "pattern"} {
		codes = append(codes, Tightened(k), Loosened(k))
	}
	seen := map[string]bool{}
	for _, tc := range propertyCases {
		for _, w := range append(append([]string{}, tc.forward...), tc.back...) {
			seen[strings.Fields(w)[0]] = true
		}
	}
	for _, c := range codes {
		if !seen[c] {
			t.Errorf("no test case gives %s", c)
		}
	}
}

func TestSchemasNil(t *testing.T) {
	s := parse(t, spec("type: object"))
	if got := render(Schemas(nil, s)); !slices.Equal(got, []string{"SchemaChanged error ."}) {
		t.Errorf("nil -> schema: %q", got)
	}
	if got := render(Schemas(s, nil)); !slices.Equal(got, []string{"SchemaChanged info ."}) {
		t.Errorf("schema -> nil: %q", got)
	}
	if got := Schemas(nil, nil); len(got) != 0 {
		t.Errorf("nil -> nil: %v", got)
	}
}

func setSchema(t *testing.T, c *apiextensionsv1.CustomResourceDefinition, version, s string) *apiextensionsv1.CustomResourceDefinition {
	lifecycle.FindVersion(c, version).Schema.OpenAPIV3Schema = parse(t, s)
	return c
}

func TestCRDs(t *testing.T) {
	webhook := func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
		c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		return c
	}
	cluster := func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
		c.Spec.Scope = apiextensionsv1.ClusterScoped
		return c
	}
	kind := func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
		c.Spec.Names.Kind = "Cron"
		return c
	}
	pruning := spec("type: object\nproperties:\n  image: {type: string}\n  replicas: {type: integer}")
	cases := []struct {
		name          string
		old, new      *apiextensionsv1.CustomResourceDefinition
		forward, back []string
	}{
		{"identical", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), nil, nil},
		{"stored version removed",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1", "v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(),
			[]string{"StoredVersionRemoved error status.storedVersions @v1", "VersionRemoved warning spec.versions @v1"},
			[]string{"VersionAdded info spec.versions @v1"}},
		{"storage version removed",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Fields("image")).CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(),
			[]string{"StoredVersionRemoved error status.storedVersions @v1", "StorageVersionRemoved error spec.versions @v1", "VersionRemoved warning spec.versions @v1", "VersionServed info spec.versions @v2", "DefaultVersionChanged warning spec.versions @v2"},
			[]string{"StorageVersionChanged info spec.versions @v1", "VersionUnserved warning spec.versions @v2", "VersionAdded info spec.versions @v1", "DefaultVersionChanged warning spec.versions @v1"}},
		{"storage version changed",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Fields("image")).CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(),
			[]string{"StorageVersionChanged info spec.versions @v2"}, []string{"StorageVersionChanged info spec.versions @v1"}},
		{"not served version removed",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(),
			[]string{"VersionRemoved info spec.versions @v1"}, []string{"VersionAdded info spec.versions @v1"}},
		{"version unserved",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(),
			[]string{"VersionUnserved warning spec.versions @v1"}, []string{"VersionServed info spec.versions @v1"}},
		{"default version changes",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Fields("image")).Stored("v1").CRD(),
			[]string{"VersionAdded info spec.versions @v2", "DefaultVersionChanged warning spec.versions @v2"},
			[]string{"VersionRemoved warning spec.versions @v2", "DefaultVersionChanged warning spec.versions @v1"}},
		{"scope changed", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), cluster(crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD()),
			[]string{"ScopeChanged error spec.scope"}, []string{"ScopeChanged error spec.scope"}},
		{"kind changed", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), kind(crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD()),
			[]string{"KindChanged error spec.names.kind"}, []string{"KindChanged error spec.names.kind"}},
		{"two storage versions", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Fields("image")).CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(),
			[]string{"StorageVersionCount error spec.versions"}, nil},
		{"conversion None between differing schemas, new",
			webhook(setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", pruning)), setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", pruning),
			[]string{"ConversionStrategyChanged info spec.conversion.strategy", "NoneConversionPrunesFields error spec.conversion @v1"},
			[]string{"ConversionStrategyChanged info spec.conversion.strategy"}},
		{"conversion None between differing schemas, as before",
			setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", pruning), setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", pruning),
			nil, nil},
		{"conversion None, more fields pruned than before",
			setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", pruning), setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", spec("type: object\nproperties:\n  image: {type: string}\n  replicas: {type: integer}\n  suspend: {type: boolean}")),
			[]string{"FieldAdded info .spec.suspend @v2", "NoneConversionPrunesFields error spec.conversion @v1"},
			[]string{"FieldRemoved error .spec.suspend @v2"}},
		{"conversion None, schemas differ without pruning",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", spec("type: object\nproperties:\n  image: {type: string, default: x}")),
			[]string{"DefaultAdded info .spec.image @v2", "NoneConversionSchemasDiffer info spec.conversion @v1"},
			[]string{"DefaultChanged warning .spec.image @v2"}},
		{"a version's field removed",
			setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1").CRD(), "v1", pruning), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1").CRD(),
			[]string{"FieldRemoved error .spec.replicas @v1"}, []string{"FieldAdded info .spec.replicas @v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(CRDs(tc.old, tc.new)); !slices.Equal(got, sorted(tc.forward...)) {
				t.Errorf("old -> new:\n got %q\nwant %q", got, sorted(tc.forward...))
			}
			if got := render(CRDs(tc.new, tc.old)); !slices.Equal(got, sorted(tc.back...)) {
				t.Errorf("new -> old:\n got %q\nwant %q", got, sorted(tc.back...))
			}
		})
	}
}

func TestVersions(t *testing.T) {
	c := setSchema(t, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), "v2", spec("type: object\nproperties:\n  image: {type: string}\n  replicas: {type: integer}"))
	got, err := Versions(c, "v2", "v1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"FieldRemoved error .spec.replicas", "NoneConversionPrunesFields error spec.conversion @v1"}
	if !slices.Equal(render(got), sorted(want...)) {
		t.Errorf("None: got %q, want %q", render(got), want)
	}
	c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	got, _ = Versions(c, "v2", "v1")
	if !slices.Equal(render(got), []string{"FieldRemoved warning .spec.replicas"}) || !strings.Contains(got[0].Message, "webhook") {
		t.Errorf("Webhook: got %q", render(got))
	}
	if _, err := Versions(c, "v2", "v9"); err == nil || !strings.Contains(err.Error(), "has no version v9 (it has v1, v2)") {
		t.Errorf("missing version: %v", err)
	}
}

// TestPruningIsSchemaPrune keeps diff and the preflights on one rule: the
// pruning errors of Schemas are exactly the paths of schema.Prune (a
// preserve-unknown-fields wildcard ".spec.*" reported at ".spec").
func TestPruningIsSchemaPrune(t *testing.T) {
	for _, tc := range propertyCases {
		for _, dir := range [][2]string{{tc.old, tc.new}, {tc.new, tc.old}} {
			old, new := parse(t, dir[0]), parse(t, dir[1])
			var want []string
			for _, p := range schema.Prune(old, new) {
				path := p.Path
				if p.Reason == schema.ReasonUnknown {
					path = rootPath(strings.TrimSuffix(path, ".*"))
				}
				want = append(want, path)
			}
			var got []string
			for _, f := range Schemas(old, new) {
				pruning := f.Code == CodePreserveUnknownFieldsRemoved || f.Code == CodeNullableRemoved || f.Code == CodeFieldRemoved
				if pruning && (f.Severity == lifecycle.SeverityError || strings.HasSuffix(f.Message, "rewrites)")) {
					got = append(got, f.Path)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: pruning findings %q, schema.Prune %q", tc.name, got, want)
			}
		}
	}
}

// leafChanged are two schemas depth levels deep, nested through
// properties, items and additionalProperties in turn, whose leaf changes
// type (and whose descriptions differ at every level).
func leafChanged(depth int) (old, new *apiextensionsv1.JSONSchemaProps) {
	all := []crdtest.Nesting{crdtest.ThroughProperties, crdtest.ThroughItems, crdtest.ThroughAdditionalProperties}
	describe := func(words string) func(*apiextensionsv1.JSONSchemaProps) {
		return func(s *apiextensionsv1.JSONSchemaProps) { s.Description = words }
	}
	return crdtest.Nested(depth, apiextensionsv1.JSONSchemaProps{Type: "string"}, describe("old"), all...),
		crdtest.Nested(depth, apiextensionsv1.JSONSchemaProps{Type: "integer"}, describe("new"), all...)
}

// unknownFieldsRemoved are two schemas depth levels deep, nested through
// properties, where the old one also has a field x and
// x-kubernetes-preserve-unknown-fields at every level: the new one prunes
// something at every level.
func unknownFieldsRemoved(depth int) (old, new *apiextensionsv1.JSONSchemaProps) {
	preserve := true
	leaf := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return crdtest.Nested(depth, leaf, func(s *apiextensionsv1.JSONSchemaProps) {
		s.Properties["x"] = leaf
		s.XPreserveUnknownFields = &preserve
	}), crdtest.Nested(depth, leaf, nil)
}

// TestSchemasAtMaxDepth: two schemas schema.MaxDepth levels deep, the
// deepest a CRD file may have, are compared whole (B25): a leaf type
// change under every nesting in turn, and a field and
// x-kubernetes-preserve-unknown-fields removed at every level, where the
// pruned field of each level is covered by the unknown fields pruned at
// the same level.
func TestSchemasAtMaxDepth(t *testing.T) {
	got := Schemas(leafChanged(schema.MaxDepth))
	leaf := strings.Repeat(".a[*].*", (schema.MaxDepth-1)/3)
	if len(got) != 1 || got[0].Code != CodeTypeChanged || got[0].Path != leaf {
		t.Errorf("leaf type changed: %d findings, want one TypeChanged at %.40s…: %.300v", len(got), leaf, got)
	}

	got = Schemas(unknownFieldsRemoved(schema.MaxDepth))
	if len(got) != schema.MaxDepth-1 {
		t.Fatalf("%d findings, want one for each of the %d levels above the leaf", len(got), schema.MaxDepth-1)
	}
	for _, f := range got {
		if f.Code != CodePreserveUnknownFieldsRemoved || f.Severity != lifecycle.SeverityError {
			t.Fatalf("finding %+v, want PreserveUnknownFieldsRemoved errors only", f)
		}
	}
	if deepest := got[len(got)-1].Path; deepest != strings.Repeat(".a", schema.MaxDepth-2) {
		t.Errorf("the last finding is at %.40s… (%d characters), want the level above the leaf", deepest, len(deepest))
	}
}

// BenchmarkSchemasNested compares the schemas of TestSchemasAtMaxDepth
// 100 and 1000 levels deep. The time grows with the size of the schemas
// and of the findings, whose paths are as long as their depth: about 2
// and 40 ms for leaf-changed, 5 and 140 ms for unknown-fields-removed
// (a finding at every level) on a 2-core machine, where it was 30 ms and
// 2.1 s, 0.26 s and 115 s before B25. Run it with
// go test -run '^$' -bench BenchmarkSchemasNested ./internal/schemadiff.
func BenchmarkSchemasNested(b *testing.B) {
	for _, shape := range []struct {
		name string
		pair func(int) (old, new *apiextensionsv1.JSONSchemaProps)
	}{{"leaf-changed", leafChanged}, {"unknown-fields-removed", unknownFieldsRemoved}} {
		for _, depth := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/depth=%d", shape.name, depth), func(b *testing.B) {
				old, new := shape.pair(depth)
				b.ReportAllocs()
				for b.Loop() {
					Schemas(old, new)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/level")
			})
		}
	}
}

// TestRuleNames (issue 32): the release a new user tried — a default
// changed, an enum value added, a description edited — gives findings that
// name crdify's rules default and enum (OLM v1 refuses the changed
// default); a description is not compared, and a bound names its keyword.
func TestRuleNames(t *testing.T) {
	old := parse(t, `{type: object, properties: {spec: {type: object, properties: {
  mode: {type: string, default: fast, description: how fast},
  size: {type: string, enum: [small, large]},
  name: {type: string, maxLength: 20}}}}}`)
	new := parse(t, `{type: object, properties: {spec: {type: object, properties: {
  mode: {type: string, default: slow, description: how fast it goes},
  size: {type: string, enum: [small, medium, large]},
  name: {type: string, maxLength: 10}}}}}`)
	var got []string
	for _, f := range Schemas(old, new) {
		got = append(got, f.Code+"="+f.Rule)
	}
	want := []string{"DefaultChanged=default", "MaxLengthTightened=maxLength", "EnumValuesAdded=enum"}
	if !slices.Equal(sorted(got...), sorted(want...)) {
		t.Errorf("findings %q, want %q", got, want)
	}
	for code, rule := range map[string]string{CodeScopeChanged: "scope", CodeStoredVersionRemoved: "storedVersionRemoval", CodeFieldRemoved: "existingFieldRemoval",
		Loosened("minProperties"): "minProperties", Tightened("pattern"): "pattern", Tightened("multipleOf"): "", CodeFieldAdded: "", CodeVersionRemoved: ""} {
		if got := RuleOf(code); got != rule {
			t.Errorf("RuleOf(%s) = %q, want %q", code, got, rule)
		}
	}
}
