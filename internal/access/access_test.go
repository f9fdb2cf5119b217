package access

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

func TestNeeds(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").CRD()
	got := Dedup(append(append(append(EditCRD(), Migrate(crd, true)...), CleanManagedFields(crd)...), Metrics()...))
	var s []string
	for _, n := range got {
		s = append(s, n.String())
	}
	want := []string{
		"update customresourcedefinitions.apiextensions.k8s.io (to write the CRD)",
		"list crontabs.stable.example.com (to list the objects)",
		"patch crontabs.stable.example.com (to rewrite the objects)",
		"update customresourcedefinitions/status.apiextensions.k8s.io (to trim status.storedVersions)",
		"get crontabs.stable.example.com (to read managedFields)",
		"get /metrics (to check the API server's metrics for clients of the version (--skip-usage-check to do without))",
	}
	if strings.Join(s, "\n") != strings.Join(want, "\n") {
		t.Errorf("needs:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	if len(Migrate(crd, false)) != 2 {
		t.Error("migrate without a trim needs the status subresource")
	}
	e := &MissingError{Operation: "migrate", CRD: "crontabs.stable.example.com", Missing: Migrate(crd, true)[2:]}
	if got, want := e.Error(), "refusing to migrate crontabs.stable.example.com, nothing was changed: missing 1 permission(s); grant them, or run as a user who has them"; got != want {
		t.Errorf("error line:\n%s\nwant:\n%s", got, want)
	}
	if got := strings.Join(e.Refusal().DetailLines(), "\n"); !strings.Contains(got, "Missing permission(s) to migrate crontabs.stable.example.com:\n  - update customresourcedefinitions/status") {
		t.Errorf("details:\n%s", got)
	}
}

func TestMigrateServerNeeds(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").CRD()
	want := []string{
		"list crontabs.stable.example.com (to count the objects)",
		"patch crontabs.stable.example.com (to measure what the rewrite loses: server-side dry runs, nothing written; --allow-pruning does without)",
		"create storageversionmigrations.storagemigration.k8s.io (to create the StorageVersionMigration)",
		"get storageversionmigrations.storagemigration.k8s.io (to follow the StorageVersionMigration)",
		"list storageversionmigrations.storagemigration.k8s.io (to follow the StorageVersionMigration)",
		"watch storageversionmigrations.storagemigration.k8s.io (to follow the StorageVersionMigration)",
		"update customresourcedefinitions/status.apiextensions.k8s.io (to trim status.storedVersions)",
	}
	if got := strings.Join(needStrings(MigrateServer(crd, true, true)), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("needs:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if got := MigrateServer(crd, false, false); len(got) != 5 || got[4].Subresource != "" || got[1].Verb != "create" {
		t.Errorf("without a trim: %v", got)
	}
}

func needStrings(needs []Need) []string {
	var s []string
	for _, n := range needs {
		s = append(s, n.String())
	}
	return s
}
