package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
)

func read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// changes returns the lines removed (-) and added (+) between a and b.
func changes(a, b string) []string {
	al, bl := difflib.SplitLines(a), difflib.SplitLines(b)
	var out []string
	for _, op := range difflib.NewMatcher(al, bl).GetOpCodes() {
		if op.Tag == 'e' {
			continue
		}
		for _, l := range al[op.I1:op.I2] {
			out = append(out, "-"+strings.TrimRight(l, "\n"))
		}
		for _, l := range bl[op.J1:op.J2] {
			out = append(out, "+"+strings.TrimRight(l, "\n"))
		}
	}
	return out
}

func TestApplyChangesOnlyTheEditedLines(t *testing.T) {
	// A multi-document file: two real CRDs, a comment and an object.
	file := "# Gateway API v0.6.2, two CRDs\n" + read(t, "crds/gateway-api/v0.6.2/referencegrants.nodesc.yaml") +
		"---\n" + read(t, "crds/gateway-api/v0.6.2/gatewayclasses.nodesc.yaml") +
		"--- # an object\n" + read(t, "crds/gateway-api/v0.6.2/examples/v1alpha2_reference-grant.yaml")
	const name = "referencegrants.gateway.networking.k8s.io"
	webhook := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "gw", Name: "conv", Path: ptr.To("/convert")}},
		ConversionReviewVersions: []string{"v1"},
	}}
	cases := []struct {
		name string
		edit func(*apiextensionsv1.CustomResourceDefinition) *edit.Result
		want []string // the changed lines, in file order; "..." matches the rest of an added block
	}{
		{"no-op", func(c *apiextensionsv1.CustomResourceDefinition) *edit.Result { return &edit.Result{Edited: c} }, nil},
		{"promote-storage", func(c *apiextensionsv1.CustomResourceDefinition) *edit.Result {
			return edit.PromoteStorage(c, "v1beta1", edit.Pruning{}, nil)
		},
			[]string{"-    storage: true", "+    storage: false", "-    storage: false", "+    storage: true"}},
		{"unserve", func(c *apiextensionsv1.CustomResourceDefinition) *edit.Result {
			return edit.SetServed(c, "v1beta1", false)
		},
			[]string{"-    served: true", "+    served: false"}},
		{"deprecate with a warning", func(c *apiextensionsv1.CustomResourceDefinition) *edit.Result {
			return edit.Deprecate(c, "v1alpha2", ptr.To(`gateway.networking.k8s.io/v1alpha2 is "old"`), false)
		}, []string{"+    deprecated: true", `+    deprecationWarning: "gateway.networking.k8s.io/v1alpha2 is \"old\""`}},
		{"add-version", func(c *apiextensionsv1.CustomResourceDefinition) *edit.Result {
			return edit.AddVersion(c, edit.AddVersionSpec{Name: "v1", Served: false})
		}, []string{"+  - additionalPrinterColumns:", "+    name: v1", "+    served: false", "..."}},
		{"conversion to Webhook", func(c *apiextensionsv1.CustomResourceDefinition) *edit.Result {
			c = c.DeepCopy()
			c.Spec.Conversion = webhook
			return &edit.Result{Edited: c}
		}, []string{"+  conversion:", "+    strategy: Webhook", "+    webhook:", "+      clientConfig:", "+        service:", "+          name: conv", "+          namespace: gw", "+          path: /convert", "+      conversionReviewVersions:", "+      - v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Parse([]byte(file))
			i, crd, err := f.FindCRD(name)
			if err != nil {
				t.Fatal(err)
			}
			r := tc.edit(crd.DeepCopy())
			if failed := r.Checks.Failed(); len(failed) > 0 {
				t.Fatalf("edit refused: %v", failed)
			}
			res, err := f.Apply(i, crd, r.Edited)
			if err != nil || res.Normalized {
				t.Fatalf("Apply: %v, normalized %v", err, res.Normalized)
			}
			got := changes(file, string(f.Bytes()))
			if len(tc.want) > 0 && tc.want[len(tc.want)-1] == "..." {
				// An added block: only additions, which hold the wanted lines
				// (a line diff may align a repeated block either way).
				added := strings.Join(got, "\n")
				for _, l := range got {
					if !strings.HasPrefix(l, "+") {
						t.Errorf("an existing line changed: %q", l)
					}
				}
				for _, w := range tc.want[:len(tc.want)-1] {
					if !strings.Contains(added, w) {
						t.Errorf("added lines lack %q", w)
					}
				}
			} else if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("changed lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// The edited file decodes to exactly the edited CRD.
			_, back, err := Parse(f.Bytes()).FindCRD(name)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(back, r.Edited) {
				t.Errorf("the edited file decodes to another CRD than the edit made")
			}
		})
	}
}

func TestFlowStyleIsNormalized(t *testing.T) {
	file := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: dashboards.kb.example.com}
spec:
  group: kb.example.com
  scope: Namespaced
  names: {plural: dashboards, singular: dashboard, kind: Dashboard, listKind: DashboardList}
  versions:
  - {name: v1alpha1, served: false, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1beta1,  served: true,  storage: true,  schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`
	f := Parse([]byte(file))
	i, crd, err := f.FindCRD("dashboards.kb.example.com")
	if err != nil {
		t.Fatal(err)
	}
	r := edit.SetServed(crd, "v1alpha1", true)
	res, err := f.Apply(i, crd, r.Edited)
	if err != nil || !res.Normalized {
		t.Fatalf("Apply: %v, normalized %v; want a normalized document", err, res.Normalized)
	}
	_, back, _ := Parse(f.Bytes()).FindCRD("dashboards.kb.example.com")
	if !back.Spec.Versions[0].Served {
		t.Error("the normalized document lost the edit")
	}
	if out := string(f.Bytes()); strings.Contains(out, "status:") || strings.Contains(out, "creationTimestamp") {
		t.Errorf("normalizing added keys the file did not have:\n%s", out)
	}

	crlf := Parse([]byte(strings.ReplaceAll(file, "\n", "\r\n")))
	i, crd, _ = crlf.FindCRD("dashboards")
	if _, err := crlf.Apply(i, crd, edit.SetServed(crd, "v1alpha1", true).Edited); err != nil {
		t.Fatal(err)
	}
	if out := string(crlf.Bytes()); strings.Count(out, "\n") != strings.Count(out, "\r\n") {
		t.Error("a CRLF file got LF line endings")
	}
}

func TestFindCRD(t *testing.T) {
	f := Parse([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n" + read(t, "crds/gateway-api/v0.6.2/gatewayclasses.nodesc.yaml")))
	if _, _, err := f.FindCRD("nosuch.example.com"); err == nil || !strings.Contains(err.Error(), "it has: gatewayclasses.gateway.networking.k8s.io") {
		t.Errorf("err = %v", err)
	}
	if _, _, err := Parse([]byte("a: b\n")).FindCRD("x"); err == nil || !strings.Contains(err.Error(), "no CustomResourceDefinition in the file") {
		t.Errorf("err = %v", err)
	}
	if _, crd, err := f.FindCRD("GatewayClass"); err != nil || crd.Name != "gatewayclasses.gateway.networking.k8s.io" {
		t.Errorf("by kind: %v", err)
	}
	gc := read(t, "crds/gateway-api/v0.6.2/gatewayclasses.nodesc.yaml")
	if _, _, err := Parse([]byte(gc + "---\n" + gc)).FindCRD("gatewayclasses.gateway.networking.k8s.io"); err == nil || !strings.Contains(err.Error(), "matches more than one document") {
		t.Errorf("duplicate: %v", err)
	}
}

// TestCorpusRoundTrip edits every CRD of the shared corpus beside the
// checkout (../shared/crds, or $CRDVERSION_CORPUS), in files with many
// documents and comments: deprecating its first version must change only
// deprecation lines, and the file must decode to exactly the edited CRD.
func TestCorpusRoundTrip(t *testing.T) {
	dir := os.Getenv("CRDVERSION_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "crds")
	}
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") != "" { // CI has ../shared: a skip there would hide a regression
			t.Fatalf("no CRD corpus at %s under CI", dir)
		}
		t.Skipf("no CRD corpus at %s; set CRDVERSION_CORPUS to run this test", dir)
	}
	files, normalized := 0, 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "/examples/") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, docText := range Parse(data).docs {
			if !strings.Contains(docText, "kind: CustomResourceDefinition") {
				continue
			}
			f := Parse(data)
			name := crdName(t, docText)
			idx, crd, err := f.FindCRD(name)
			if err != nil || idx != i {
				t.Errorf("%s: FindCRD(%s): %v", path, name, err)
				continue
			}
			oldWarning := ""
			if w := crd.Spec.Versions[0].DeprecationWarning; w != nil {
				oldWarning = *w
			}
			r := edit.Deprecate(crd, crd.Spec.Versions[0].Name, ptr.To("use the next version"), false)
			res, err := f.Apply(idx, crd, r.Edited)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			for _, l := range changes(string(data), string(f.Bytes())) {
				// Only deprecation lines change: the key lines and the
				// continuation lines of a multi-line old warning.
				continuation := strings.HasPrefix(l, "-") && oldWarning != "" && strings.Contains(oldWarning, strings.TrimSpace(l[1:]))
				if !res.Normalized && !strings.Contains(l, "deprecat") && !continuation {
					t.Errorf("%s: a line other than the deprecation changed: %q", path, l)
				}
			}
			if res.Normalized {
				normalized++
			}
			_, back, err := Parse(f.Bytes()).FindCRD(name)
			if err != nil || !equality.Semantic.DeepEqual(back, r.Edited) {
				t.Errorf("%s: the edited file does not decode to the edited CRD (%v)", path, err)
			}
			files++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no CRD found in the corpus")
	}
	t.Logf("%d CRD documents edited and round-tripped, %d of them re-serialized (anchors or flow style)", files, normalized)
}

func crdName(t *testing.T, doc string) string {
	t.Helper()
	var meta struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
		t.Fatal(err)
	}
	return meta.Metadata.Name
}
