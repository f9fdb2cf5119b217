package e2e

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestDiffLive compares two versions of a live CRD through the plugin
// binary: exit code 0 without error-level findings, 1 with them, 2 when
// the comparison fails (kubectl diff's codes).
func TestDiffLive(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := crontab("diff.example.com", apiextensionsv1.NamespaceScoped)
	v2 := crontabVersion("v2", true, false)
	spec := v2.Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["suspend"] = apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	spec.Required = []string{"image"}
	v2.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	createCRD(t, c, crd)
	kubeconfig := []string{"--kubeconfig", srv.Kubeconfig}

	// v2 -> v1: suspend is pruned (conversion None), an error.
	r := binary(t, nil, append([]string{"diff", crd.Name, "v2", "v1"}, kubeconfig...)...)
	if r.code != 1 || !strings.Contains(r.stdout, "FieldRemoved") || !strings.Contains(r.stdout, ".spec.suspend") || r.stderr != "" {
		t.Errorf("v2 -> v1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// v1 -> v2: image becomes required, also an error; with -o json.
	r = binary(t, nil, append([]string{"diff", "crontabs.diff.example.com", "v1", "v2", "-o", "json"}, kubeconfig...)...)
	if r.code != 1 || !strings.Contains(r.stdout, `"code": "RequiredAdded"`) {
		t.Errorf("v1 -> v2: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A version with itself: nothing, exit 0.
	r = binary(t, nil, append([]string{"diff", crd.Name, "v1", "v1"}, kubeconfig...)...)
	if r.code != 0 || r.stdout != "crontabs.diff.example.com v1 -> v1: 0 errors, 0 warnings, 0 notes\n" {
		t.Errorf("v1 -> v1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Failures: exit 2 with one error line.
	for _, args := range [][]string{{"diff", crd.Name, "v1", "v9"}, {"diff", "nosuchcrds.example.com", "v1", "v2"}, {"diff", crd.Name, "v1"}} {
		r = binary(t, nil, append(args, kubeconfig...)...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "error: ") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
			t.Errorf("%v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
}
