package lifecycle

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMatchCRDs(t *testing.T) {
	crd := func(group, plural, kind string, short ...string) apiextensionsv1.CustomResourceDefinition {
		return apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group:    group,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.TrimSuffix(plural, "s"), Kind: kind, ShortNames: short},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}, {Name: "v2beta1"}},
			},
		}
	}
	crds := []apiextensionsv1.CustomResourceDefinition{
		crd("a.example.com", "widgets", "Widget", "wd"),
		crd("b.example.com", "widgets", "Widget", "wd"),
		crd("c.example.com", "gizmos", "Gizmo", "gz"),
	}
	for arg, want := range map[string]string{
		"gizmos": "gizmos.c.example.com", "gizmo": "gizmos.c.example.com", "gz": "gizmos.c.example.com",
		"Gizmo": "gizmos.c.example.com", "GIZMOS": "gizmos.c.example.com", "gizmo.c.example.com": "gizmos.c.example.com",
		"Gizmo.c.example.com": "gizmos.c.example.com", "gizmos.v2beta1.c.example.com": "gizmos.c.example.com",
		"wd": "widgets.a.example.com,widgets.b.example.com", "widgets.b.example.com": "widgets.b.example.com",
		"gizmos.v9.c.example.com": "", "gizmos.d.example.com": "", ".gizmos": "", "": "", "pods": "",
	} {
		var got []string
		for _, m := range MatchCRDs(crds, arg) {
			got = append(got, m.Name)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("MatchCRDs(%q) = %v, want %s", arg, got, want)
		}
	}
}

func TestConversionProbeVersion(t *testing.T) {
	crd := func(conv apiextensionsv1.ConversionStrategyType, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: conv}, Versions: versions,
		}}
	}
	v := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	cases := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{"default version differs from the storage version", crd(apiextensionsv1.WebhookConverter, v("v1alpha1", true, true), v("v1alpha2", true, false)), "v1alpha2"},
		{"storage is the default: the next served one", crd(apiextensionsv1.WebhookConverter, v("v1beta1", true, false), v("v1", true, true), v("v1alpha1", true, false)), "v1beta1"},
		{"the only other version is unserved", crd(apiextensionsv1.WebhookConverter, v("v1", true, true), v("v2", false, false)), ""},
		{"None conversion", crd(apiextensionsv1.NoneConverter, v("v1alpha1", true, true), v("v1alpha2", true, false)), ""},
	}
	for _, tc := range cases {
		if got := ConversionProbeVersion(tc.crd, ListVersion(tc.crd)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCRDArg: kubectl's TYPE/NAME form names a CRD as crd/NAME (friction
// 11 of the preflight-holes report: it was sent to the API server as a
// name and refused with "may not contain '/'").
func TestCRDArg(t *testing.T) {
	for arg, want := range map[string]string{
		"crontabs.stable.example.com":     "crontabs.stable.example.com",
		"crd/crontabs.stable.example.com": "crontabs.stable.example.com",
		"CRDs/crontab":                    "crontab",
		"customresourcedefinition/ct":     "ct",
		"customresourcedefinitions.apiextensions.k8s.io/crontabs.stable.example.com": "crontabs.stable.example.com",
	} {
		if got, err := CRDArg(arg); err != nil || got != want {
			t.Errorf("CRDArg(%q) = %q, %v; want %q", arg, got, err, want)
		}
	}
	for _, arg := range []string{"deployment/web", "crd/", "crd/a/b", "/crontabs"} {
		if got, err := CRDArg(arg); err == nil {
			t.Errorf("CRDArg(%q) = %q, want an error", arg, got)
		}
	}
}
