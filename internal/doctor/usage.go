package doctor

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// UsageMeasurer assesses how clients use versions from every source it
// has (preflight.Usage).
type UsageMeasurer interface {
	Measure(ctx context.Context, targets ...schema.GroupVersionResource) (usage.Assessments, error)
}

// ClientUsage is the check of the deprecated served versions of the CRDs
// of a run: the versions of every CRD are measured at once (Prepare: one
// wait of the window for all, one scan per CRD of the objects'
// managedFields), and each deprecated served version gets a finding with
// its verdict, the sources it rests on and the clients they name:
//
//   - InUse: a warning, with a retire dry run to see the plan;
//   - Unknown: information, naming what was not seen;
//   - NotInUse: information.
//
// The assessments themselves go into the report (report.DoctorCRD.Usage).
func ClientUsage(m UsageMeasurer) UsageSource {
	return &clientUsage{m: m}
}

type clientUsage struct {
	m        UsageMeasurer
	measured usage.Assessments
}

// deprecatedServed are the deprecated served versions of crd.
func deprecatedServed(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Deprecated {
			out = append(out, v.Name)
		}
	}
	return out
}

// Prepare measures the deprecated served versions of every CRD of crds.
func (u *clientUsage) Prepare(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	var targets []schema.GroupVersionResource
	for _, crd := range crds {
		for _, v := range deprecatedServed(crd) {
			targets = append(targets, cluster.GVR(crd, v))
		}
	}
	if len(targets) == 0 {
		return nil
	}
	as, err := u.m.Measure(ctx, targets...)
	if err != nil {
		return err
	}
	u.measured = as
	return nil
}

func (u *clientUsage) Findings(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]lifecycle.Finding, []usage.Assessment, error) {
	var fs []lifecycle.Finding
	var as []usage.Assessment
	for _, v := range deprecatedServed(crd) {
		gvr := cluster.GVR(crd, v)
		a, ok := u.measured[gvr]
		if !ok {
			// A CRD Prepare did not see (Check called alone).
			m, err := u.m.Measure(ctx, gvr)
			if err != nil {
				return nil, nil, err
			}
			a = m[gvr]
		}
		as = append(as, a)
		fs = append(fs, deprecatedUsage(crd, v, a))
	}
	return fs, as, nil
}

// deprecatedUsage is the finding for deprecated version v of crd from its
// assessment a.
func deprecatedUsage(crd *apiextensionsv1.CustomResourceDefinition, v string, a usage.Assessment) lifecycle.Finding {
	f := lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Version: v, Severity: lifecycle.SeverityInfo}
	named := ""
	if cs := Clients(a); len(cs) > 0 {
		named = "; named clients: " + strings.Join(cs, "; ")
	}
	switch a.Verdict {
	case usage.InUse:
		f.Severity = lifecycle.SeverityWarning
		f.Message = fmt.Sprintf("deprecated version %s: %s%s; move those clients to %s", v, a.Message(), named, orNew(lifecycle.StorageVersion(crd)))
		f = f.WithRun(lifecycle.Crdversion("retire", crd.Name, v).With("dry-run", ""))
	default:
		f.Message = fmt.Sprintf("deprecated version %s: %s%s", v, a.Message(), named)
	}
	return f
}

// Clients are the clients the sources of a name, one line each, the
// sources that count requests left out (they name no client).
func Clients(a usage.Assessment) []string {
	var out []string
	for _, s := range a.Sources {
		for _, c := range s.Clients {
			line := c.String(a.GroupVersion())
			if c.InWindow {
				line += " (inside the window)"
			}
			out = append(out, line)
		}
	}
	return out
}

func orNew(v string) string {
	if v == "" {
		return "the storage version"
	}
	return v
}
