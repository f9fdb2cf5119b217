package lifecycle

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

func TestMatchCRDs(t *testing.T) {
	crds := []apiextensionsv1.CustomResourceDefinition{
		*crdtest.New("widgets.a.example.com").ShortNames("wd").Version("v1").Version("v2beta1").CRD(),
		*crdtest.New("widgets.b.example.com").ShortNames("wd").Version("v1").Version("v2beta1").CRD(),
		*crdtest.New("gizmos.c.example.com").ShortNames("gz").Version("v1").Version("v2beta1").CRD(),
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
	webhook := func() *crdtest.Builder {
		return crdtest.New("widgets.example.com").Webhook(nil)
	}
	served, storage := crdtest.Served, crdtest.Storage
	cases := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{"default version differs from the storage version", webhook().Version("v1alpha1", served, storage).Version("v1alpha2", served).CRD(), "v1alpha2"},
		{"storage is the default: the next served one", webhook().Version("v1beta1", served).Version("v1", served, storage).Version("v1alpha1", served).CRD(), "v1beta1"},
		{"the only other version is unserved", webhook().Version("v1", served, storage).Version("v2").CRD(), ""},
		{"None conversion", crdtest.New("widgets.example.com").NoneConversion().Version("v1alpha1", served, storage).Version("v1alpha2", served).CRD(), ""},
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
