package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestAdviceAfterAcceptedPruning (issue 17): after add-version
// --allow-pruning, the printed Next was promote-storage without the flag,
// and after promote-storage --allow-pruning, status's Next was migrate
// without it: both refuse in that state (conversion None drops .spec.image
// of the object stored at v1). It follows the printed advice: each Next
// runs as printed, and says out loud that it accepts losing data.
func TestAdviceAfterAcceptedPruning(t *testing.T) {
	c := newClients(t)
	crd := createCRD(t, c, crontab("accepted-pruning.example.com", apiextensionsv1.NamespaceScoped))
	ensureNamespace(t, c, "pruned")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "accepted-pruning.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "c1"}, "spec": map[string]any{"cronSpec": "* * * * *", "image": "kept-at-v1"},
	}}
	if _, err := resource(c, crd, "v1", "pruned").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schemaFile := filepath.Join(t.TempDir(), "v2.yaml")
	writeFile(t, schemaFile, `
type: object
properties:
  spec:
    type: object
    properties:
      cronSpec: {type: string}
      replicas: {type: integer}
`)
	added := mustRun(t, "add-version", crd.Name, "v2", "--schema-file", schemaFile, "--allow-pruning")
	next := followNext(t, added.stdout, "promote-storage "+crd.Name+" v2 --allow-pruning")

	mustRun(t, next...)
	s := statusJSON(t, crd.Name)
	if s.State != lifecycle.StateS2 || s.Next == nil || s.Next.Command != "kubectl crdversion migrate "+crd.Name+" --allow-pruning" ||
		!strings.Contains(s.Next.Loss, "ACCEPTS LOSING DATA") || !strings.Contains(s.Next.Loss, ".spec.image") {
		t.Fatalf("after promote-storage --allow-pruning: %s, next %+v", s.State, s.Next)
	}
	out := mustRun(t, "status", crd.Name)
	next = followNext(t, out.stdout, "migrate "+crd.Name+" --allow-pruning")
	mustRun(t, next...)
	if after := statusJSON(t, crd.Name); after.State != lifecycle.StateS3 || len(after.StoredVersions) != 1 || after.StoredVersions[0] != "v2" {
		t.Errorf("after the migration: %s, storedVersions %v", after.State, after.StoredVersions)
	}
}

// followNext returns the arguments of the Next: line printed in out, which
// must be kubectl crdversion want and be followed by the WARNING that it
// accepts losing data.
func followNext(t *testing.T, out, want string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "Next: ")
		if !ok {
			continue
		}
		if rest != "kubectl crdversion "+want {
			t.Fatalf("Next: %s, want kubectl crdversion %s\n%s", rest, want, out)
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  WARNING: --allow-pruning ACCEPTS LOSING DATA") {
			t.Errorf("Next: %s is not followed by the loss it accepts:\n%s", rest, out)
		}
		return strings.Fields(want)
	}
	t.Fatalf("no Next: line:\n%s", out)
	return nil
}
