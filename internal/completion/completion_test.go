package completion

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

func TestCRDNames(t *testing.T) {
	crds := []apiextensionsv1.CustomResourceDefinition{
		*crdtest.New("widgets.example.com").CRD(),
		*crdtest.New("crontabs.stable.example.com").Kind("CronTab").CRD(),
		*crdtest.New("cronjobs.batch.example.com").Kind("CronJob").CRD(),
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
	c := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1beta1", crdtest.Served, crdtest.Deprecated).
		Version("v1alpha1").
		Version("v1", crdtest.Served, crdtest.Storage).
		Version("v2", crdtest.Served).
		Stored("v1beta1", "v1").CRD()
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
			if got := strings.Join(Versions(c, tc.given, tc.prefix), "|"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
