package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// CheckReferences is the name of the reference check of unserve (and of
// retire's unserve step): owner references, scale targets and Helm release records.
const CheckReferences = "References"

// ReferenceConcurrency is the number of resources the inventory lists at
// once, ReferencePageSize its objects per page.
const (
	ReferenceConcurrency = 4
	ReferencePageSize    = 500
)

// References finds owner references, scale targets and Helm release records on a live cluster.
type References struct {
	Client *cluster.Client
	// Progress, when set, is called after each resource listed.
	Progress func(done, total int)
}

// Find is references.Find on the cluster for target: every listable
// resource's metadata, ReferenceConcurrency lists at once.
func (r References) Find(ctx context.Context, target references.Target) (*references.Inventory, error) {
	inv, err := r.FindMatching(ctx, func(ref metav1.OwnerReference) bool {
		return ref.APIVersion == target.APIVersion && ref.Kind == target.Kind
	})
	if inv != nil {
		inv.Target = target
	}
	return inv, err
}

// FindMatching is Find for the references match chooses (see
// references.Options.Match).
func (r References) FindMatching(ctx context.Context, match func(metav1.OwnerReference) bool) (*references.Inventory, error) {
	src, err := cluster.NewReferenceSource(r.Client, ReferencePageSize)
	if err != nil {
		return nil, err
	}
	return references.Find(ctx, src, references.Target{}, references.Options{Concurrency: ReferenceConcurrency, Forbidden: cluster.Forbidden,
		NotFound: cluster.NotFound, Progress: r.Progress, Match: match})
}

// ReferenceTarget is the owner reference that names version of crd.
func ReferenceTarget(crd *apiextensionsv1.CustomResourceDefinition, version string) references.Target {
	return references.Target{APIVersion: lifecycle.GroupVersion(crd, version), Kind: crd.Spec.Names.Kind}
}

// RepairCommand is the command that rewrites the references to version
// of crd.
func RepairCommand(crd *apiextensionsv1.CustomResourceDefinition, version string) lifecycle.Command {
	return lifecycle.Crdversion("repair-references", crd.Name, version)
}

// ReferencesCheck is the check that no object's owner reference or scale
// target names version of crd (references.Consequence says what breaks).
// Fail when references are found (with the repair command in Run) and
// when the inventory could not read every resource (unknown is not pass).
func ReferencesCheck(crd *apiextensionsv1.CustomResourceDefinition, version string, inv *references.Inventory) edit.Check {
	gv := lifecycle.GroupVersion(crd, version)
	c := edit.Check{Name: CheckReferences}
	for _, rc := range inv.ByResource(3) {
		c.Details = append(c.Details, rc.String())
	}
	for _, u := range inv.Unseen {
		c.Details = append(c.Details, "not read: "+u.Name()+": "+u.Reason)
	}
	switch {
	case len(inv.Dependents) > 0:
		repair := RepairCommand(crd, version)
		c.Outcome, c.Run = edit.Fail, []lifecycle.Command{repair}
		on := fmt.Sprintf(" on objects of %d %s", len(inv.ByResource(0)), plural(len(inv.ByResource(0)), "resource", "resources"))
		if !slices.ContainsFunc(inv.Dependents, func(d references.Dependent) bool { return d.Release == nil }) {
			on = "" // Helm release records only
		}
		c.Message = fmt.Sprintf("%s%s %s %s %s: once %s is unserved, %s; rewrite them to %s first (%s)",
			references.Count(inv.Dependents), on, references.Verb(inv.Dependents),
			gv, crd.Spec.Names.Kind, version, references.Consequence(inv.Dependents), lifecycle.GroupVersion(crd, lifecycle.StorageVersion(crd)), repair.Render(nil))
		if !inv.Complete() {
			c.Message += fmt.Sprintf("; and %d %s could not be read, so there may be more", len(inv.Unseen), plural(len(inv.Unseen), "resource", "resources"))
		}
	case !inv.Complete():
		c.Outcome = edit.Fail
		c.Message = fmt.Sprintf("references to %s unknown: %d of the resources could not be read (%s); grant list on them, or make their lists answer, and run again — or unserve without knowing with --skip-reference-check",
			gv, len(inv.Unseen), unseenNames(inv.Unseen, 3))
	default:
		c.Outcome = edit.Pass
		c.Message = fmt.Sprintf("no owner reference, scale target or Helm release record names %s %s (%d objects of %d resources read)", gv, crd.Spec.Names.Kind, inv.Objects, inv.Resources)
	}
	return c
}

// ReferencesSkipped is the check when --skip-reference-check was
// given: a warning the output records.
func ReferencesSkipped(gv string) edit.Check {
	return edit.Check{Name: CheckReferences, Outcome: edit.Warn, Message: "references to " + gv + " were NOT checked (--skip-reference-check)"}
}

func unseenNames(us []references.Unseen, n int) string {
	var names []string
	for i, u := range us {
		if i == n {
			names = append(names, fmt.Sprintf("%d more", len(us)-n))
			break
		}
		names = append(names, u.Name())
	}
	return strings.Join(names, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
