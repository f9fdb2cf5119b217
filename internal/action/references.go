package action

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// ReferenceFinder finds the owner references, scale targets and Helm release records that name target
// (references.Find on the cluster).
type ReferenceFinder interface {
	Find(ctx context.Context, target references.Target) (*references.Inventory, error)
}

// knownVersion reports whether version is, or was, a version of crd: in
// spec.versions, status.storedVersions or the versions retire removed.
func knownVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	return lifecycle.FindVersion(crd, version) != nil || slices.Contains(crd.Status.StoredVersions, version) || slices.Contains(lifecycle.RetiredVersions(crd), version)
}

// RepairReferencesOptions are the inputs of RepairReferences.
type RepairReferencesOptions struct {
	// Version is the version the references name; it need not be in
	// the CRD any more (a reference to a removed version is repaired too).
	Version string
	// To is the version they are rewritten to: a served version of the
	// CRD other than Version; "" is the storage version.
	To     string
	DryRun lifecycle.DryRun
}

// RepairReferences finds every reference to Version of crd (f) and
// rewrites its apiVersion to To with a JSON patch that first tests the
// object's uid and the reference's uid and apiVersion (p; see
// references.Patch): the garbage collector resolves the owner through the
// served version, and no other writer's change is overwritten. The report
// names what the inventory could not read: references there are unknown.
// A To that is not a served version of crd, or equal to Version, is an
// error before anything is read; a Version that crd neither has nor had
// and that no reference names is an error too (a typo, most likely).
func RepairReferences(ctx context.Context, f ReferenceFinder, p references.Patcher, crd *apiextensionsv1.CustomResourceDefinition, o RepairReferencesOptions) (*report.ReferenceRepair, error) {
	to := o.To
	if to == "" {
		to = lifecycle.StorageVersion(crd)
	}
	switch v := lifecycle.FindVersion(crd, to); {
	case to == o.Version:
		return nil, fmt.Errorf("the references name %s already: give --to another served version of %s", to, crd.Name)
	case v == nil:
		return nil, fmt.Errorf("%s has no version %s to rewrite the references to (versions: %v)", crd.Name, to, lifecycle.VersionNames(crd))
	case !v.Served:
		return nil, fmt.Errorf("%s of %s is not served: the garbage collector cannot resolve an owner through it; give --to a served version", to, crd.Name)
	}
	target := preflight.ReferenceTarget(crd, o.Version)
	inv, err := f.Find(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("finding the references to %s: %w", target.APIVersion, err)
	}
	if len(inv.Dependents) == 0 && !knownVersion(crd, o.Version) {
		return nil, fmt.Errorf("%s has no version %s (spec.versions: %s; status.storedVersions: %s), and no owner reference, scale target or Helm release record names it",
			crd.Name, o.Version, strings.Join(lifecycle.VersionNames(crd), ", "), strings.Join(crd.Status.StoredVersions, ", "))
	}
	out := &report.ReferenceRepair{CRD: crd.Name, Version: o.Version, Target: target, To: lifecycle.GroupVersion(crd, to),
		Found: len(inv.Dependents), Resources: inv.Resources, Objects: inv.Objects, Unseen: inv.Unseen}
	if o.DryRun != lifecycle.DryRunNone {
		out.DryRun = o.DryRun.String()
	}
	out.Repairs, err = references.RepairAll(ctx, p, inv.Dependents, out.To, o.DryRun)
	return out, err
}
