package action

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// UsageMeasurer measures how clients use versions (preflight.Usage).
type UsageMeasurer interface {
	// Measure assesses each of targets from every source; an error is
	// one line (an audit log that is not one, the end of ctx).
	Measure(ctx context.Context, targets ...schema.GroupVersionResource) (usage.Assessments, error)
	// Describe names the sources, for the line printed before.
	Describe() string
	// Writers is the managedFields source alone (preflight.Usage.Writers).
	Writers(ctx context.Context, gvr schema.GroupVersionResource) usage.SourceReport
}

// UsageOptions are the inputs of the client-usage check.
type UsageOptions struct {
	// Skip skips the check (--skip-usage-check); the output records it.
	Skip bool
	// Permissions, when set, is asked before the measurement — which can
	// take a while (the window) — for what the step needs: to update the
	// CRD when Write, and what the measurement's sources need (see
	// NeedsReporter). Anything missing refuses at once, naming all of it.
	Permissions PermissionChecker
	Write       bool
	// Measuring, when set, is called before the measurement with the
	// group/version and the sources (UsageMeasurer.Describe).
	Measuring func(groupVersion, sources string)
	// References, when set, finds the references to the version
	// (preflight.References); SkipReferences is --skip-reference-check,
	// which the output records.
	References     ReferenceFinder
	SkipReferences bool
	// Admission, when set, lists the admission webhook and policy rules
	// (cluster.Client.AdmissionRules) for the check that the unserve
	// leaves none blind; --skip-reference-check skips it too.
	Admission AdmissionLister
}

// AdmissionLister lists the rules of the cluster's admission webhooks and
// policies (cluster.Client).
type AdmissionLister interface {
	AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error)
}

// PermissionChecker asks the API server (SelfSubjectAccessReview) which of
// needs the user lacks.
type PermissionChecker interface {
	Missing(ctx context.Context, needs []access.Need) (missing []access.Need, checked bool)
}

// NeedsReporter is a UsageMeasurer that says what its sources need
// (preflight.Usage).
type NeedsReporter interface {
	Needs(crd *apiextensionsv1.CustomResourceDefinition) []access.Need
}

// SetServed is the preflight of serving (served) or unserving a version of
// the target: the rules of edit.SetServed and, to unserve, the check that
// no owner reference, scale target or Helm release record names the version (u.References, every
// listable resource read; see preflight.ReferencesCheck), that it leaves no
// admission rule blind (u.Admission; references.AdmissionRulesCheck), and the check
// that no client uses the version, from every source of m (every API
// server instance's /metrics or Prometheus, managedFields, audit logs). m
// may be nil (manifest mode without a cluster). The checks' details carry
// the evidence.
func SetServed(ctx context.Context, m UsageMeasurer, t *Target, version string, served bool, u UsageOptions) (*edit.Result, error) {
	r := edit.SetServed(t.CRD, version, served)
	if served || r.NoOp || len(r.Checks.Failed()) > 0 {
		return r, nil
	}
	gv := lifecycle.GroupVersion(t.CRD, version)
	switch {
	case u.SkipReferences:
		r.Checks = append(r.Checks, preflight.ReferencesSkipped(gv), references.AdmissionRulesSkipped(t.CRD.Spec.Names.Plural+"."+t.CRD.Spec.Group))
	case !t.live():
		r.Checks = append(r.Checks, edit.Check{Name: preflight.CheckReferences, Outcome: edit.Skip, Message: "references to " + gv + " not checked: " + t.LiveSkip})
	default:
		if u.References != nil {
			inv, err := u.References.Find(ctx, preflight.ReferenceTarget(t.CRD, version))
			if err != nil {
				return nil, fmt.Errorf("finding the references to %s: %w", gv, err)
			}
			r.Checks = append(r.Checks, preflight.ReferencesCheck(t.CRD, version, inv))
		}
		if u.Admission != nil {
			rules, err := u.Admission.AdmissionRules(ctx)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.Checks = append(r.Checks, references.AdmissionRulesCheck(t.CRD, r.Edited, version, rules, err))
		}
	}
	switch {
	case u.Skip:
		r.Checks = append(r.Checks, preflight.ClientUsageSkipped(gv))
		return r, nil
	case m == nil || !t.live():
		r.Checks = append(r.Checks, edit.Check{Name: preflight.CheckClientUsage, Outcome: edit.Skip, Message: "client usage of " + gv + " not checked: " + t.LiveSkip})
		return r, nil
	}
	if u.Permissions != nil {
		var needs []access.Need
		if u.Write {
			needs = append(needs, access.EditCRD()...)
		}
		if n, ok := m.(NeedsReporter); ok {
			needs = append(needs, n.Needs(t.CRD)...)
		}
		if missing, _ := u.Permissions.Missing(ctx, needs); len(missing) > 0 {
			return nil, &access.MissingError{Operation: "unserve", CRD: t.CRD.Name, Missing: missing}
		}
	}
	if u.Measuring != nil {
		u.Measuring(gv, m.Describe())
	}
	gvr := cluster.GVR(t.CRD, version)
	as, err := m.Measure(ctx, gvr)
	if err != nil {
		return nil, err
	}
	r.Checks = append(r.Checks, preflight.ClientUsage(as[gvr]))
	return r, nil
}

// Deprecate is the preflight of deprecating a version of the target
// (warning: the deprecationWarning, nil for the API server's default), or
// of undoing it; see edit.Deprecate. It needs nothing from the cluster.
func Deprecate(t *Target, version string, warning *string, undo bool) *edit.Result {
	return edit.Deprecate(t.CRD, version, warning, undo)
}
