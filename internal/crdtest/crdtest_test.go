package crdtest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestBuilder: the options a test relies on land where they say.
func TestBuilder(t *testing.T) {
	b := New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().
		EachVersion(StatusSubresource, PrinterColumn("Size", "string", ".spec.size")).
		Version("v1", Served, Storage, Fields("a")).
		Version("v2", Served).
		Deprecate("v1").Stored("v1")
	c := b.CRD()
	if c.Spec.Group != "stable.example.com" || c.Spec.Names.Plural != "crontabs" || c.Spec.Names.Kind != "CronTab" || c.Spec.Names.ListKind != "CronTabList" {
		t.Errorf("names: %+v", c.Spec.Names)
	}
	if c.Spec.Conversion == nil || c.Spec.Conversion.Strategy != "None" {
		t.Errorf("conversion: %+v", c.Spec.Conversion)
	}
	v1, v2 := c.Spec.Versions[0], c.Spec.Versions[1]
	if !v1.Served || !v1.Storage || !v1.Deprecated || v2.Deprecated || !v2.Served || v2.Storage {
		t.Errorf("flags: %+v %+v", v1, v2)
	}
	for _, v := range c.Spec.Versions {
		if v.Subresources == nil || v.Subresources.Status == nil || len(v.AdditionalPrinterColumns) != 1 {
			t.Errorf("%s lacks the parts of every version: %+v", v.Name, v)
		}
	}
	if _, ok := v1.Schema.OpenAPIV3Schema.Properties["spec"].Properties["a"]; !ok {
		t.Errorf("v1 schema: %+v", v1.Schema.OpenAPIV3Schema)
	}
	if _, ok := v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"]; !ok {
		t.Errorf("v2 default schema: %+v", v2.Schema.OpenAPIV3Schema)
	}
	c.Spec.Versions[0].Name = "changed"
	if b.CRD().Spec.Versions[0].Name != "v1" {
		t.Error("CRD does not return a copy")
	}
}

// TestNamesAndConditions: short names are set, and a condition set twice
// is one condition with the last status.
func TestNamesAndConditions(t *testing.T) {
	c := New("widgets.example.com").ShortNames("wd", "w").
		Condition(apiextensionsv1.Established, apiextensionsv1.ConditionTrue).
		Condition(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue).
		Condition(apiextensionsv1.Established, apiextensionsv1.ConditionFalse).CRD()
	if !slices.Equal(c.Spec.Names.ShortNames, []string{"wd", "w"}) {
		t.Errorf("short names %v", c.Spec.Names.ShortNames)
	}
	want := []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse},
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
	}
	if !slices.Equal(c.Status.Conditions, want) {
		t.Errorf("conditions %+v, want %+v", c.Status.Conditions, want)
	}
}

// TestNested: Nested nests its levels through the nestings in turn, and
// NestedJSON writes what json.Marshal makes of it; WithSchemaJSON puts a
// schema into the version named.
func TestNested(t *testing.T) {
	leaf := apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(3))}
	all := []Nesting{ThroughProperties, ThroughItems, ThroughAdditionalProperties}
	s := Nested(5, leaf, func(s *apiextensionsv1.JSONSchemaProps) { s.Description = "level" }, all...)
	got := s.Properties["a"].Items.Schema.AdditionalProperties.Schema.Properties["a"]
	if s.Description != "level" || got.Type != "string" || *got.MaxLength != 3 || got.Description != "" {
		t.Errorf("Nested(5) ends in %+v", got)
	}
	if d := Nested(1, leaf, nil); d.Type != "string" || d.Properties != nil {
		t.Errorf("Nested(1) = %+v, want the leaf", d)
	}
	for depth := 1; depth <= 7; depth++ {
		for _, through := range [][]Nesting{nil, {ThroughItems}, {ThroughAdditionalProperties}, all} {
			want, err := json.Marshal(Nested(depth, leaf, nil, through...))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, NestedJSON(depth, leaf, through...), want) {
				t.Errorf("NestedJSON(%d, %v) = %s, want %s", depth, through, NestedJSON(depth, leaf, through...), want)
			}
		}
	}

	crd := New("deeps.example.com").Version("v1", Served, Storage).Version("v2", Served).CRD()
	data, err := WithSchemaJSON(crd, "v2", NestedJSON(3, leaf, ThroughItems))
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema = Nested(3, leaf, nil, ThroughItems)
	if want, _ := json.Marshal(crd); !jsonEqual(t, data, want) {
		t.Errorf("WithSchemaJSON = %s, want %s", data, want)
	}
	if _, err := WithSchemaJSON(crd, "v3", nil); err == nil {
		t.Error("WithSchemaJSON of a version the CRD does not have: no error")
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

func ptr[T any](v T) *T { return &v }
