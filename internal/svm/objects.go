package svm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Migration is a StorageVersionMigration of the cluster as doctor reads
// it: its name, the resource it migrates (spec.resource), when it was
// created, what its conditions say, and when the condition that decided
// the phase last changed (zero while Pending).
type Migration struct {
	Name     string
	Group    string
	Resource string
	Created  time.Time
	Status   Status
	At       time.Time
}

// FromObject is m read from a StorageVersionMigration (v1, or v1beta1 of
// the same shape).
func FromObject(o *svmv1.StorageVersionMigration) Migration {
	m := Migration{Name: o.Name, Group: o.Spec.Resource.Group, Resource: o.Spec.Resource.Resource, Created: o.CreationTimestamp.Time,
		Status: Interpret(o.Status.Conditions)}
	decided := string(m.Status.Phase)
	if m.Status.Phase == Pending {
		decided = ""
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, decided); c != nil {
		m.At = c.LastTransitionTime.Time
	}
	return m
}

// PendingFor is how long a migration may stay without a condition before
// doctor warns that no controller acts on it: kube-controller-manager's
// migrator marks a new migration Running within seconds.
const PendingFor = 10 * time.Minute

// Findings are doctor's findings about the StorageVersionMigrations of
// crd's resource among ms, at now (issue 28, case 34: a one-shot
// migration object of a fixed name taken as proof of a migration):
//   - CodeStorageMigrationNotProof (warning) when one Succeeded while
//     status.storedVersions still lists versions besides the storage
//     version: it may have run before the storage version changed, and
//     applying it again does not run it again;
//   - CodeStorageMigrationFailed (warning) for a Failed one that no later
//     Succeeded one follows, while storedVersions lists older versions;
//   - CodeStorageMigrationPending for one that neither succeeded nor
//     failed (a warning after PendingFor: no migrator acts on it;
//     information before) or is Running, while storedVersions lists
//     older versions.
//
// With storedVersions [storage] there is nothing to report: no migration
// is owed, and migrate could not clear the objects.
//
// Each names the migrations and gives kubectl crdversion migrate, which
// rewrites every object and trims storedVersions itself.
func Findings(crd *apiextensionsv1.CustomResourceDefinition, ms []Migration, now time.Time) []lifecycle.Finding {
	var mine []Migration
	for _, m := range ms {
		if m.Group == crd.Spec.Group && m.Resource == crd.Spec.Names.Plural {
			mine = append(mine, m)
		}
	}
	slices.SortFunc(mine, func(a, b Migration) int { return a.Created.Compare(b.Created) })
	storage := lifecycle.StorageVersion(crd)
	var extra []string
	for _, s := range crd.Status.StoredVersions {
		if s != storage {
			extra = append(extra, s)
		}
	}
	migrate := lifecycle.Crdversion("migrate", crd.Name)
	var out []lifecycle.Finding
	var succeeded []string
	var lastSucceeded time.Time
	for _, m := range mine {
		if m.Status.Phase == Succeeded {
			succeeded = append(succeeded, fmt.Sprintf("%s (Succeeded %s)", m.Name, stamp(m.At)))
			lastSucceeded = later(lastSucceeded, m.At)
		}
	}
	if len(extra) == 0 || storage == "" {
		// storedVersions lists the storage version only: no object is
		// stored at another version, and no migration is owed; a stale
		// migration object misleads no step of the lifecycle, and
		// migrate could not make it go.
		return nil
	}
	if len(succeeded) > 0 {
		out = append(out, lifecycle.Finding{Code: lifecycle.CodeStorageMigrationNotProof, Severity: lifecycle.SeverityWarning, Version: strings.Join(extra, ","),
			Message: fmt.Sprintf("StorageVersionMigration %s, yet status.storedVersions still lists %s besides the storage version %s: a Succeeded migration is not proof that every object was rewritten at %s (it may have run before the storage version changed, and applying the same object again does not run it again); migrate again before trimming or removing %s",
				strings.Join(succeeded, ", "), strings.Join(extra, ", "), storage, storage, strings.Join(extra, ", "))}.WithRun(migrate))
	}
	for _, m := range mine {
		switch m.Status.Phase {
		case Failed:
			if !lastSucceeded.IsZero() && !lastSucceeded.Before(m.At) {
				continue
			}
			out = append(out, lifecycle.Finding{Code: lifecycle.CodeStorageMigrationFailed, Severity: lifecycle.SeverityWarning,
				Message: fmt.Sprintf("StorageVersionMigration %s Failed %s (%s: %s), and no later one succeeded: objects may not all be rewritten at %s, and a failed migration object is not run again",
					m.Name, stamp(m.At), m.Status.Reason, m.Status.Message, storage), Version: strings.Join(extra, ",")}.WithRun(migrate))
		case Running:
			out = append(out, lifecycle.Finding{Code: lifecycle.CodeStorageMigrationPending, Severity: lifecycle.SeverityInfo,
				Message: fmt.Sprintf("StorageVersionMigration %s is running (since %s)", m.Name, stamp(m.At))})
		case Pending:
			f := lifecycle.Finding{Code: lifecycle.CodeStorageMigrationPending, Severity: lifecycle.SeverityInfo,
				Message: fmt.Sprintf("StorageVersionMigration %s has neither succeeded nor failed since it was created %s", m.Name, stamp(m.Created))}
			if age := now.Sub(m.Created); age >= PendingFor {
				f.Severity = lifecycle.SeverityWarning
				f.Message += fmt.Sprintf(", %s ago: no storage version migrator acts on it (kube-controller-manager runs one with the StorageVersionMigrator feature gate); migrate with the client engine instead", age.Round(time.Minute))
				f = f.WithRun(migrate)
			}
			out = append(out, f)
		}
	}
	return out
}

// FindingsOr is Findings, or, when listing the migrations failed with
// err, a CodeStorageMigrationsUnknown note for a CRD whose
// status.storedVersions lists versions besides the storage version (where
// a stale migration would mislead); none for the others.
func FindingsOr(crd *apiextensionsv1.CustomResourceDefinition, ms []Migration, err error, now time.Time) []lifecycle.Finding {
	if err == nil {
		return Findings(crd, ms, now)
	}
	if slices.Equal(crd.Status.StoredVersions, []string{lifecycle.StorageVersion(crd)}) {
		return nil
	}
	return []lifecycle.Finding{{Code: lifecycle.CodeStorageMigrationsUnknown, Severity: lifecycle.SeverityInfo,
		Message: "StorageVersionMigrations not read (" + err.Error() + "): one of this resource that Succeeded would not prove a migration while status.storedVersions lists older versions"}}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return "at " + t.UTC().Format(time.RFC3339)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
