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

// ClientUsage is the check of the served versions of the CRDs of a run
// that the lifecycle moves clients off (measuredVersions: deprecated, or
// older than the storage version): the versions of every CRD are measured
// at once (Prepare: one wait of the window for all, one scan per CRD of
// the objects' managedFields), and each gets a finding with its verdict,
// the sources it rests on and the clients they name:
//
//   - InUse of a deprecated version: a warning, with a retire dry run to
//     see the plan (CodeDeprecatedVersionInUse);
//   - InUse of an old version not yet deprecated: information, naming the
//     clients to move before it is deprecated (CodeOldVersionInUse);
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

// measuredVersions are the served versions of crd whose client usage
// doctor measures: those deprecated, and those older than the storage
// version by lifecycle.Order (the lifecycle deprecates and retires them
// next). A version whose age nothing says is left out, as is the storage
// version.
func measuredVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	storage := lifecycle.StorageVersion(crd)
	order := lifecycle.OrderOf(crd, nil)
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != storage && (v.Deprecated || (storage != "" && order.Newer(storage, v.Name))) {
			out = append(out, v.Name)
		}
	}
	return out
}

// Prepare measures the measuredVersions of every CRD of crds.
func (u *clientUsage) Prepare(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	var targets []schema.GroupVersionResource
	for _, crd := range crds {
		for _, v := range measuredVersions(crd) {
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
	for _, v := range measuredVersions(crd) {
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
		fs = append(fs, usageFinding(crd, v, a))
	}
	return fs, as, nil
}

// usageFinding is the finding for version v of crd (measuredVersions)
// from its assessment a.
func usageFinding(crd *apiextensionsv1.CustomResourceDefinition, v string, a usage.Assessment) lifecycle.Finding {
	deprecated := lifecycle.FindVersion(crd, v).Deprecated
	storage := orNew(lifecycle.StorageVersion(crd))
	f := lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Version: v, Severity: lifecycle.SeverityInfo}
	what := "deprecated version " + v
	if !deprecated {
		f.Code, what = lifecycle.CodeOldVersionInUse, fmt.Sprintf("old version %s (older than the storage version %s, not deprecated)", v, storage)
	}
	named := ""
	if cs := a.Clients(); len(cs) > 0 {
		named = "; named clients: " + strings.Join(cs, "; ")
	}
	switch {
	case a.Verdict == usage.InUse && deprecated:
		f.Severity = lifecycle.SeverityWarning
		f.Message = fmt.Sprintf("%s: %s%s; move those clients to %s", what, a.Message(), named, storage)
		f = f.WithRun(lifecycle.Crdversion("retire", crd.Name, v).With("dry-run", ""))
	case a.Verdict == usage.InUse:
		f.Message = fmt.Sprintf("%s: %s%s; move those clients to %s before it is deprecated and unserved", what, a.Message(), named, storage)
	default:
		f.Message = fmt.Sprintf("%s: %s%s", what, a.Message(), named)
	}
	return f
}

func orNew(v string) string {
	if v == "" {
		return "the storage version"
	}
	return v
}
