package action

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestMissingStoredMessage (issue 17): a file lacking the cluster's storage
// version v1 was told "applying the file will be rejected until kubectl
// crdversion migrate ... trims them", but migrate trims
// status.storedVersions to the storage version and never removes the
// storage version itself: the storage version must change first.
func TestMissingStoredMessage(t *testing.T) {
	live := crdtest.New("gadgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD()
	got := missingStoredMessage(live, []string{"v1"})
	if !strings.Contains(got, "v1 is the storage version now, which migrate never trims") || !strings.Contains(got, "promote-storage") || strings.Contains(got, "trims them") {
		t.Errorf("the storage version missing from the file: %s", got)
	}
	live.Spec.Versions[0].Storage, live.Spec.Versions[1].Storage = false, true
	live.Status.StoredVersions = []string{"v1", "v2"}
	got = missingStoredMessage(live, []string{"v1"})
	if !strings.Contains(got, "migrate gadgets.example.com rewrites the objects and trims status.storedVersions to the storage version v2") || strings.Contains(got, "promote-storage") {
		t.Errorf("an old stored version missing from the file: %s", got)
	}
}
