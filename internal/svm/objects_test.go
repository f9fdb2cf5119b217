package svm

import (
	"strings"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestFindings (case 34): while storedVersions lists an older version, a
// Succeeded migration is no proof, and says so with migrate; a Failed one
// is a warning unless a later one succeeded; one that neither succeeded
// nor failed is information until PendingFor, then a warning that nothing
// acts on it. With storedVersions trimmed nothing is reported (migrate,
// the fix, could not clear it); migrations of other resources are not
// this CRD's.
func TestFindings(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	untrimmed := crdtest.New("plugins.console.example.com").Version("v1alpha1", crdtest.Served).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1alpha1", "v1").CRD()
	trimmed := crdtest.New("plugins.console.example.com").Version("v1alpha1", crdtest.Served).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
	mig := func(name, resource string, phase Phase, at time.Time) Migration {
		return Migration{Name: name, Group: "console.example.com", Resource: resource, Created: at.Add(-time.Minute), Status: Status{Phase: phase, Reason: "R", Message: "M"}, At: at}
	}
	early, late := now.Add(-48*time.Hour), now.Add(-time.Hour)
	for _, tc := range []struct {
		name string
		ms   []Migration
		crd  bool // untrimmed
		want []string
	}{
		{"succeeded, storedVersions untrimmed", []Migration{mig("fixed", "plugins", Succeeded, early), mig("other", "widgets", Failed, early)}, true,
			[]string{"StorageMigrationNotProof warning v1alpha1: StorageVersionMigration fixed (Succeeded at 2026-12-03T12:00:00Z), yet status.storedVersions still lists v1alpha1 besides the storage version v1: a Succeeded migration is not proof | kubectl crdversion migrate plugins.console.example.com"}},
		{"succeeded, trimmed", []Migration{mig("fixed", "plugins", Succeeded, early)}, false, nil},
		{"failed, then succeeded", []Migration{mig("first", "plugins", Failed, early), mig("second", "plugins", Succeeded, late)}, false, nil},
		{"succeeded, then failed, trimmed", []Migration{mig("first", "plugins", Succeeded, early), mig("second", "plugins", Failed, late)}, false, nil},
		{"failed, storedVersions untrimmed", []Migration{mig("second", "plugins", Failed, late)}, true,
			[]string{"StorageMigrationFailed warning v1alpha1: StorageVersionMigration second Failed at 2026-12-05T11:00:00Z (R: M), and no later one succeeded | kubectl crdversion migrate plugins.console.example.com"}},
		{"pending, new", []Migration{{Name: "new", Group: "console.example.com", Resource: "plugins", Created: now.Add(-time.Minute), Status: Status{Phase: Pending}}}, true,
			[]string{"StorageMigrationPending info : StorageVersionMigration new has neither succeeded nor failed since it was created at 2026-12-05T11:59:00Z | "}},
		{"pending, old", []Migration{{Name: "old", Group: "console.example.com", Resource: "plugins", Created: now.Add(-PendingFor), Status: Status{Phase: Pending}}}, true,
			[]string{"StorageMigrationPending warning : StorageVersionMigration old has neither succeeded nor failed since it was created at 2026-12-05T11:50:00Z, 10m0s ago: no storage version migrator acts on it | kubectl crdversion migrate plugins.console.example.com"}},
		{"pending, failed, storedVersions trimmed", []Migration{{Name: "old", Group: "console.example.com", Resource: "plugins", Created: now.Add(-PendingFor), Status: Status{Phase: Pending}},
			mig("failed", "plugins", Failed, late)}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := trimmed
			if tc.crd {
				crd = untrimmed
			}
			fs := Findings(crd, tc.ms, now)
			if len(fs) != len(tc.want) {
				t.Fatalf("%d findings, want %d: %+v", len(fs), len(tc.want), fs)
			}
			for i, f := range fs {
				got := f.Code + " " + string(f.Severity) + " " + f.Version + ": " + f.Message + " | " + f.Fix
				head, tail, _ := strings.Cut(tc.want[i], " | ")
				if !strings.HasPrefix(got, head) || !strings.HasSuffix(got, " | "+tail) {
					t.Errorf("finding\n%s\nwant prefix %q and fix %q", got, head, tail)
				}
			}
		})
	}
}

// TestFromObject: the phase and the time of the condition that decided
// it.
func TestFromObject(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	o := &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "g", Resource: "r"}},
		Status: svmv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{{Type: string(svmv1.MigrationSucceeded), Status: metav1.ConditionTrue, LastTransitionTime: at}}}}
	if m := FromObject(o); m.Status.Phase != Succeeded || !m.At.Equal(at.Time) || m.Group != "g" || m.Resource != "r" {
		t.Errorf("%+v", m)
	}
	if m := FromObject(&svmv1.StorageVersionMigration{}); m.Status.Phase != Pending || !m.At.IsZero() {
		t.Errorf("no condition: %+v", m)
	}
}
