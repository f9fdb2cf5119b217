// Package svm is the server engine of kubectl crdversion migrate: instead of
// rewriting the objects itself, it creates a StorageVersionMigration
// (storagemigration.k8s.io) for the CRD's resource and follows it while the
// kube-controller-manager's storage version migrator rewrites every object.
// See docs/migrate.md, "--engine=server".
//
// This file is the pure part: which API version to use, the object to
// create, what its conditions mean, and the preflight particular to the
// server engine. run.go talks to the API server.
package svm

import (
	"fmt"
	"slices"
	"strings"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// Group is the API group of StorageVersionMigration.
const Group = "storagemigration.k8s.io"

// Resource is its resource name.
const Resource = "storageversionmigrations"

// Versions are the versions of Group this package can drive, preferred
// first. Both have the same shape (spec.resource {group, resource};
// status.conditions Running/Succeeded/Failed; status.resourceVersion):
// v1beta1 from Kubernetes 1.35, v1 from 1.37. (v1alpha1, 1.30–1.34, had
// another spec and is not supported.)
var Versions = []string{"v1", "v1beta1"}

// NotServedError refuses the server engine on a cluster that serves none of
// Versions.
type NotServedError struct {
	// Served are the versions of Group the cluster does serve (maybe none).
	Served []string
}

func (e *NotServedError) Error() string {
	served := "does not serve the API group " + Group
	if len(e.Served) > 0 {
		served = "serves " + Group + " only at " + strings.Join(e.Served, ", ")
	}
	return fmt.Sprintf("--engine=server needs the StorageVersionMigration API (%s/%s), and this cluster %s; use --engine=client",
		Group, strings.Join(Versions, " or "), served)
}

// ChooseVersion picks the version of Group to use from the versions the
// cluster serves (discovery): the first of Versions it serves, else a
// *NotServedError.
func ChooseVersion(served []string) (string, error) {
	for _, v := range Versions {
		if slices.Contains(served, v) {
			return v, nil
		}
	}
	return "", &NotServedError{Served: served}
}

// GenerateName is the metadata.generateName of the StorageVersionMigration
// for crd: "crdversion-<plural>-", to which the API server appends five
// random characters.
func GenerateName(crd *apiextensionsv1.CustomResourceDefinition) string {
	return "crdversion-" + crd.Spec.Names.Plural + "-"
}

// New is the StorageVersionMigration that migrates crd's resource, at
// apiVersion Group/version.
func New(crd *apiextensionsv1.CustomResourceDefinition, version string) *svmv1.StorageVersionMigration {
	return &svmv1.StorageVersionMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: Group + "/" + version, Kind: "StorageVersionMigration"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: GenerateName(crd)},
		Spec: svmv1.StorageVersionMigrationSpec{
			Resource: metav1.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural},
		},
	}
}

// Phase of a StorageVersionMigration as its conditions tell it (see
// result.Phase, where the values live so that view can name them).
type Phase = result.Phase

// The phases.
const (
	Pending   = result.PhasePending
	Running   = result.PhaseRunning
	Succeeded = result.PhaseSucceeded
	Failed    = result.PhaseFailed
)

// Status is what the conditions of a StorageVersionMigration say.
type Status struct {
	Phase Phase
	// Settled is true when the migration is over and the controller is done
	// with it: Succeeded or Failed is True and Running is not. From
	// Kubernetes 1.37 the kube-controller-manager sets Running to False only
	// after it has finished with the CRD (on success, storedVersions set to
	// [storage] when the CRD's generation did not change since the
	// migration began), so the CRD is read after Settled, not after
	// Succeeded.
	Settled bool
	// Reason and Message are those of the condition that decided Phase.
	Reason, Message string
}

// Interpret reads conditions (status.conditions of a
// StorageVersionMigration). Failed wins over Succeeded should both be True.
func Interpret(conditions []metav1.Condition) Status {
	running := meta.FindStatusCondition(conditions, string(svmv1.MigrationRunning))
	runningTrue := running != nil && running.Status == metav1.ConditionTrue
	for _, terminal := range []svmv1.MigrationConditionType{svmv1.MigrationFailed, svmv1.MigrationSucceeded} {
		if c := meta.FindStatusCondition(conditions, string(terminal)); c != nil && c.Status == metav1.ConditionTrue {
			return Status{Phase: Phase(terminal), Settled: !runningTrue, Reason: c.Reason, Message: c.Message}
		}
	}
	if runningTrue {
		return Status{Phase: Running, Reason: running.Reason, Message: running.Message}
	}
	return Status{Phase: Pending}
}

// PreferredVersionLoss is the server engine's own pruning check. The
// controller sends its no-op patches through the resource's preferred
// version (the first in discovery: kubectl's default version), not
// necessarily through the storage version as the client engine does. With
// conversion strategy None, an object read and written through another
// version is pruned by that version's schema on the way. When the preferred
// version differs from the storage version under None conversion, it
// returns the preferred version and the fields that the schemas of the
// storage version and of the versions in status.storedVersions declare and
// the preferred version's schema lacks (sorted, no repeats); otherwise
// ("", nil).
func PreferredVersionLoss(crd *apiextensionsv1.CustomResourceDefinition) (preferred string, fields []string) {
	if lifecycle.UsesWebhook(crd) {
		return "", nil
	}
	storage := lifecycle.StorageVersion(crd)
	pref := lifecycle.FindVersion(crd, lifecycle.DefaultVersion(crd))
	if storage == "" || pref == nil || pref.Name == storage {
		return "", nil
	}
	var lost []string
	for _, name := range append([]string{storage}, crd.Status.StoredVersions...) {
		if v := lifecycle.FindVersion(crd, name); v != nil && v.Name != pref.Name {
			lost = append(lost, schema.PrunedFields(schema.Of(v), schema.Of(pref))...)
		}
	}
	if len(lost) == 0 {
		return "", nil
	}
	slices.Sort(lost)
	return pref.Name, slices.Compact(lost)
}
