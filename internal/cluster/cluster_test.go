package cluster

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
