package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestCase34StaleOneShotStorageVersionMigration: p1 was written while
// v1alpha1 was the storage version, and a fixed-name
// StorageVersionMigration for plugins Succeeded then; the storage version
// is v1 now, storedVersions [v1alpha1 v1]. Nothing reconciles the
// migration object with the CRD (no kube-controller-manager here, as in
// the case). doctor says that the Succeeded migration is not proof,
// naming it, with migrate as the fix, and status shows it too; the fix, pasted, rewrites p1 at v1
// and trims storedVersions, keeping its contents; then doctor no longer
// reports the migration.
func TestCase34StaleOneShotStorageVersionMigration(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	_, crd, before := buildCase(t, c, "34-stale-one-shot-storageversionmigration", "plugins.console.example.com")
	wantStoredAt(t, crd, "console.example.com/v1alpha1", 1)

	const name = "plugins-storage-version-migration"
	svms := c.dyn.Resource(schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"})
	created, err := svms.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"resource": map[string]any{"group": "console.example.com", "resource": "plugins"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svms.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	succeeded := time.Now().UTC().Truncate(time.Second)
	if err := unstructured.SetNestedSlice(created.Object, []any{map[string]any{"type": "Succeeded", "status": "True", "reason": "MigrationSucceeded",
		"message": "the migration has succeeded", "lastTransitionTime": succeeded.Format(time.RFC3339)}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := svms.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	findings := func() []lifecycle.Finding {
		t.Helper()
		var rep report.Doctor
		r := crdversion(t, "doctor", crd.Name, "--skip-usage-check", "--skip-reference-check", "-o", "json")
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.CRDs) != 1 {
			t.Fatalf("doctor: %v\n%s%s", err, r.stdout, r.stderr)
		}
		var out []lifecycle.Finding
		for _, f := range rep.CRDs[0].Findings {
			if strings.HasPrefix(f.Code, "StorageMigration") {
				out = append(out, f)
			}
		}
		return out
	}
	fs := findings()
	if len(fs) != 1 {
		t.Fatalf("doctor's StorageVersionMigration findings: %+v", fs)
	}
	f := fs[0]
	for _, want := range []string{"StorageVersionMigration " + name + " (Succeeded at " + succeeded.Format(time.RFC3339) + ")",
		"yet status.storedVersions still lists v1alpha1 besides the storage version v1", "is not proof"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("doctor's finding %q does not say %q", f.Message, want)
		}
	}
	if f.Code != lifecycle.CodeStorageMigrationNotProof || f.Severity != lifecycle.SeverityWarning || f.Version != "v1alpha1" {
		t.Errorf("finding %+v", f)
	}

	// status shows the same finding.
	st := statusJSON(t, crd.Name)
	if !slices.ContainsFunc(st.Findings, func(s lifecycle.Finding) bool {
		return s.Code == lifecycle.CodeStorageMigrationNotProof && s.Message == f.Message && s.Fix == f.Fix
	}) {
		t.Errorf("status does not show the migration: %+v", st.Findings)
	}

	args, ok := strings.CutPrefix(f.Fix, "kubectl crdversion ")
	if !ok || args != "migrate "+crd.Name {
		t.Fatalf("fix %q", f.Fix)
	}
	succeeds(t, strings.Fields(args)...)
	wantStoredAt(t, crd, "console.example.com/v1", 1)
	if got := storedVersionsOf(t, c, crd.Name); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions after the fix: %v", got)
	}
	assertHealthy(t, c, crd.Name, before)
	if fs := findings(); len(fs) != 0 {
		t.Errorf("doctor still reports the migration after the objects were migrated: %+v", fs)
	}
}
