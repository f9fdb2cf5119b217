package action

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
)

const crontabs = `# the CronTab CRD
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
---
apiVersion: v1
kind: Namespace
metadata:
  name: crontabs
`

// TestLoadFileEditsItsDocument: without a cluster, LoadFile reads the CRD
// from a file or from standard input, Apply changes only its served line,
// and WriteBack keeps the file's mode.
func TestLoadFileEditsItsDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(crontabs), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, in string }{{"file", path, ""}, {"standard input", "-", crontabs}} {
		t.Run(tc.name, func(t *testing.T) {
			target, m, err := LoadFile(context.Background(), nil, "crontabs", tc.path, strings.NewReader(tc.in), "no kubeconfig")
			if err != nil {
				t.Fatal(err)
			}
			if !target.Manifest || target.Live != nil || target.LiveSkip != "no cluster configured (no kubeconfig)" || target.CRD.Name != "crontabs.stable.example.com" {
				t.Fatalf("target %+v", target)
			}
			normalized, err := m.Apply(edit.SetServed(target.CRD, "v1beta1", false).Edited)
			if err != nil || normalized {
				t.Fatalf("Apply: normalized %v, %v", normalized, err)
			}
			want := strings.Replace(crontabs, "- name: v1beta1\n    served: true", "- name: v1beta1\n    served: false", 1)
			if got := string(m.Bytes()); got != want {
				t.Errorf("edited file:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	_, m, err := LoadFile(context.Background(), nil, "crontabs.stable.example.com", path, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteBack(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("after WriteBack: %v, %v; want mode 0640", info.Mode(), err)
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(path, []byte(crontabs), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadFile(context.Background(), nil, "widgets", path, nil, ""); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("no such CRD: %v, want an error prefixed with the path", err)
	}
	if _, _, err := LoadFile(context.Background(), nil, "crontabs", filepath.Join(dir, "missing.yaml"), nil, ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := LoadFile(context.Background(), nil, "crontabs", "-", strings.NewReader(""), ""); err == nil || !strings.HasPrefix(err.Error(), "-: ") {
		t.Errorf("empty standard input: %v", err)
	}
}

func TestLiveChecks(t *testing.T) {
	b := crdtest.New("crontabs.stable.example.com").Version("v1", crdtest.Storage).Version("v2")
	edited := b.CRD()
	live := func(stored ...string) *apiextensionsv1.CustomResourceDefinition {
		return b.Stored(stored...).CRD()
	}
	for _, tc := range []struct {
		name    string
		target  *Target
		check   string
		outcome edit.Outcome
		message string
	}{
		{"no live state", &Target{LiveSkip: "the cluster has no CRD crontabs.stable.example.com"}, "LiveState", edit.Skip,
			"checks of live state (status.storedVersions, objects) skipped: the cluster has no CRD crontabs.stable.example.com"},
		{"all stored versions kept", &Target{Live: live("v1", "v2")}, "LiveStoredVersions", edit.Pass,
			"every version in the cluster's status.storedVersions [v1, v2] is in the file"},
		{"a stored version dropped", &Target{Live: live("v1beta1", "v1", "v0")}, "LiveStoredVersions", edit.Warn,
			"the cluster's status.storedVersions lists v1beta1, v0, which this file's spec.versions lacks: applying the file will be rejected until kubectl crdversion migrate crontabs.stable.example.com rewrites the objects and trims status.storedVersions to the storage version v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := LiveChecks(tc.target, edited)
			if len(cs) != 1 || cs[0].Name != tc.check || cs[0].Outcome != tc.outcome || cs[0].Message != tc.message {
				t.Errorf("got %+v\nwant %s %s %q", cs, tc.check, tc.outcome, tc.message)
			}
		})
	}
}
