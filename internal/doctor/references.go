package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// ReferenceFinder reads the owner references, scale targets and Helm release records of every
// object of the cluster that match (preflight.References.FindMatching).
type ReferenceFinder interface {
	FindMatching(ctx context.Context, match func(metav1.OwnerReference) bool) (*references.Inventory, error)
}

// brokenReferences finds, in one inventory for all of crds, every owner
// reference and scale target that names one of them (its group and kind)
// through a version it does not serve: unserved, or not in spec.versions
// at all (references.Consequence says what breaks).
func brokenReferences(ctx context.Context, f ReferenceFinder, crds []*apiextensionsv1.CustomResourceDefinition) (*references.Inventory, error) {
	served := map[schema.GroupKind]map[string]bool{}
	for _, crd := range crds {
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		served[gk] = map[string]bool{}
		for _, v := range crd.Spec.Versions {
			served[gk][v.Name] = v.Served
		}
	}
	return f.FindMatching(ctx, func(ref metav1.OwnerReference) bool {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return false
		}
		vs, ok := served[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
		return ok && !vs[gv.Version]
	})
}

// referenceFindings are the findings of crd from the inventory inv:
// per version it does not serve that references name, an error
// with the repair; when inv could not read every resource and crd has
// versions that are not served or were removed, a warning that names what
// it could not read (not under every CRD of the run: one whose versions
// are all served and none removed has references only to versions it
// never had, which no workflow of this tool leaves behind).
func referenceFindings(crd *apiextensionsv1.CustomResourceDefinition, inv *references.Inventory) []lifecycle.Finding {
	byVersion := map[string]*references.Inventory{}
	var versions []string
	for _, d := range inv.Dependents {
		gv, err := schema.ParseGroupVersion(d.Owner.APIVersion)
		if err != nil || gv.Group != crd.Spec.Group || d.Owner.Kind != crd.Spec.Names.Kind {
			continue
		}
		if byVersion[gv.Version] == nil {
			byVersion[gv.Version] = &references.Inventory{}
			versions = append(versions, gv.Version)
		}
		byVersion[gv.Version].Dependents = append(byVersion[gv.Version].Dependents, d)
	}
	var out []lifecycle.Finding
	for _, v := range versions {
		deps := byVersion[v]
		why := "which is not served"
		if lifecycle.FindVersion(crd, v) == nil {
			why = "which is not in spec.versions"
		}
		var where []string
		for _, rc := range deps.ByResource(3) {
			where = append(where, rc.String())
		}
		f := lifecycle.Finding{Code: lifecycle.CodeReferencesBroken, Severity: lifecycle.SeverityError, Version: v,
			Message: fmt.Sprintf("%s %s %s %s, %s: %s; rewrite them to %s/%s (%s)",
				references.Count(deps.Dependents), references.Verb(deps.Dependents), crd.Spec.Group+"/"+v, crd.Spec.Names.Kind, why, references.Consequence(deps.Dependents), crd.Spec.Group, lifecycle.StorageVersion(crd), strings.Join(where, "; "))}
		if !lifecycle.IsVersionName(v) {
			// The API server keeps an apiVersion like "group/V1" or
			// "group/v1 "; repair-references takes version names only.
			f.Message = fmt.Sprintf("%s %s %q %s, which is not a version name: %s; edit them by hand to name %s/%s (%s)",
				references.Count(deps.Dependents), references.Verb(deps.Dependents), crd.Spec.Group+"/"+v, crd.Spec.Names.Kind, references.Consequence(deps.Dependents), crd.Spec.Group, lifecycle.StorageVersion(crd), strings.Join(where, "; "))
			out = append(out, f)
			continue
		}
		out = append(out, f.WithRun(lifecycle.Crdversion("repair-references", crd.Name, v)))
	}
	if !inv.Complete() && notAllServed(crd) {
		var names []string
		for i, u := range inv.Unseen {
			if i == 3 {
				names = append(names, fmt.Sprintf("and %d more", len(inv.Unseen)-i))
				break
			}
			names = append(names, u.Name()+" ("+u.Reason+")")
		}
		way := "make their lists answer and run doctor again"
		if slices.ContainsFunc(inv.Unseen, func(u references.Unseen) bool { return u.Forbidden }) {
			way = "grant list on them (the crdversion-references role of docs/rbac.md) and run doctor again"
		}
		resources := "resources"
		if len(inv.Unseen) == 1 {
			resources = "resource"
		}
		out = append(out, lifecycle.Finding{Code: lifecycle.CodeReferencesUnknown, Severity: lifecycle.SeverityWarning,
			Message: fmt.Sprintf("references to versions of %s that are not served are unknown on the objects of %d %s that could not be read: %s; %s",
				crd.Name, len(inv.Unseen), resources, strings.Join(names, "; "), way)})
	}
	return out
}

// notAllServed reports whether crd has a version that is not served, or
// had versions that are no longer in spec.versions.
func notAllServed(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			return true
		}
	}
	for _, s := range crd.Status.StoredVersions {
		if lifecycle.FindVersion(crd, s) == nil {
			return true
		}
	}
	return len(lifecycle.RetiredVersions(crd)) > 0
}

// admissionFindings are the findings of crd from the admission rules of
// the cluster: a warning naming the webhook and policy rules of its
// resource that see no request now (references.Blind: an Exact rule
// listing no served version, an Equivalent one no version in
// spec.versions) — a policy that enforces nothing; when the rules could
// not be read (err) and crd has versions not served or removed, a warning
// that they are unknown.
func admissionFindings(crd *apiextensionsv1.CustomResourceDefinition, rules []references.AdmissionRule, err error) []lifecycle.Finding {
	resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
	if err != nil {
		if !notAllServed(crd) {
			return nil
		}
		return []lifecycle.Finding{{Code: lifecycle.CodeAdmissionRulesUnknown, Severity: lifecycle.SeverityWarning,
			Message: fmt.Sprintf("admission rules of %s that name versions it no longer serves are unknown: %v", resource, err)}}
	}
	blind := references.Blind(rules, crd.Spec.Group, crd.Spec.Names.Plural, references.VersionsOf(crd))
	if len(blind) == 0 {
		return nil
	}
	var names []string
	for _, r := range blind {
		names = append(names, r.String())
	}
	return []lifecycle.Finding{{Code: lifecycle.CodeAdmissionRulesBlind, Severity: lifecycle.SeverityWarning,
		Message: fmt.Sprintf("%d admission rule(s) of %s list no version they can be matched through, so they see no request of it and enforce nothing: %s; add %s (or \"*\") to their apiVersions where they come from",
			len(blind), resource, strings.Join(names, "; "), lifecycle.StorageVersion(crd))}}
}
