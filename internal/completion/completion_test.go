package completion

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func crd(name, kind string, stored []string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinition {
	return apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind}, Versions: versions},
		Status:     apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
	}
}

func TestCRDNames(t *testing.T) {
	crds := []apiextensionsv1.CustomResourceDefinition{
		crd("widgets.example.com", "Widget", nil),
		crd("crontabs.stable.example.com", "CronTab", nil),
		crd("cronjobs.batch.example.com", "CronJob", nil),
	}
	for _, tc := range []struct {
		name, prefix string
		given        []string
		want         string // joined by "|"
	}{
		{"all, sorted", "", nil, "cronjobs.batch.example.com\tCronJob|crontabs.stable.example.com\tCronTab|widgets.example.com\tWidget"},
		{"prefix", "cront", nil, "crontabs.stable.example.com\tCronTab"},
		{"given left out", "cron", []string{"cronjobs.batch.example.com"}, "crontabs.stable.example.com\tCronTab"},
		{"none", "x", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(CRDNames(crds, tc.given, tc.prefix), "|"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	c := crd("crontabs.stable.example.com", "CronTab", []string{"v1beta1", "v1"},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1"},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true},
	)
	for _, tc := range []struct {
		name, prefix string
		given        []string
		want         string // joined by "|"
	}{
		{"priority order", "", nil, "v2\tserved|v1\tstorage, served, in storedVersions|v1beta1\tserved, deprecated, in storedVersions|v1alpha1\tnot served"},
		{"prefix", "v1b", nil, "v1beta1\tserved, deprecated, in storedVersions"},
		{"given left out", "v1", []string{"v1", "v1alpha1"}, "v1beta1\tserved, deprecated, in storedVersions"},
		{"none", "v3", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(Versions(&c, tc.given, tc.prefix), "|"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
