package action

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// MatchingFinder finds the references that match
// (preflight.References.FindMatching).
type MatchingFinder interface {
	FindMatching(ctx context.Context, match func(metav1.OwnerReference) bool) (*references.Inventory, error)
}

// StatusReferences is status --references: one inventory of every
// listable resource for the owner references, scale targets and Helm release records that name
// the CRD of r (its group and kind) through a version other than its
// storage version, counted per version.
func StatusReferences(ctx context.Context, f MatchingFinder, r *report.Status) (*report.StatusReferences, error) {
	inv, err := f.FindMatching(ctx, func(ref metav1.OwnerReference) bool {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		return err == nil && gv.Group == r.CRD.Group && ref.Kind == r.CRD.Kind && gv.Version != r.StorageVersion
	})
	if err != nil {
		return nil, err
	}
	out := &report.StatusReferences{Versions: []report.VersionReferences{}, Resources: inv.Resources, Objects: inv.Objects}
	for _, u := range inv.Unseen {
		out.Unseen = append(out.Unseen, u.Name())
	}
	type counts struct {
		refs      int
		objects   map[string]bool
		resources map[references.Resource]bool
	}
	by := map[string]*counts{}
	var order []string
	for _, d := range inv.Dependents {
		gv, _ := schema.ParseGroupVersion(d.Owner.APIVersion)
		c := by[gv.Version]
		if c == nil {
			c = &counts{objects: map[string]bool{}, resources: map[references.Resource]bool{}}
			by[gv.Version] = c
			order = append(order, gv.Version)
		}
		c.refs++
		c.objects[d.Resource.GroupResource().String()+" "+d.Object()] = true
		c.resources[d.Resource] = true
	}
	rank := func(v string) int {
		if i := slices.IndexFunc(r.Versions, func(x lifecycle.VersionStatus) bool { return x.Name == v }); i >= 0 {
			return i
		}
		return len(r.Versions)
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(a) - rank(b) })
	for _, v := range order {
		c := by[v]
		out.Versions = append(out.Versions, report.VersionReferences{Version: v, References: c.refs, Objects: len(c.objects), Resources: len(c.resources)})
	}
	return out, nil
}
