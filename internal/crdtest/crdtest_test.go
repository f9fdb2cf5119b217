package crdtest

import (
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
