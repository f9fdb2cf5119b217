package cli

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// deprecatedUsage is doctor's check of deprecated versions that still
// receive requests, from one or two reads of the API server's metrics taken
// once for the whole run.
func deprecatedUsage(first, second *usage.Metrics) DeprecatedUsageFunc {
	return func(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]lifecycle.Finding, error) {
		var out []lifecycle.Finding
		for _, v := range crd.Spec.Versions {
			if !v.Served || !v.Deprecated {
				continue
			}
			r := usage.CompareMetrics(cluster.GVR(crd, v.Name), first, second)
			f := lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Version: v.Name,
				Fix: fmt.Sprintf("move those clients to %s; kubectl crdversion retire %s %s --dry-run shows the rest", orNew(lifecycle.StorageVersion(crd)), crd.Name, v.Name)}
			switch {
			case r.Verdict == usage.InUse:
				f.Severity = lifecycle.SeverityWarning
				f.Message = fmt.Sprintf("deprecated version %s still receives requests: %s", v.Name, strings.Join(r.Evidence()[:len(r.Evidence())-1], "; "))
			case len(r.Lifetime) > 0:
				f.Severity = lifecycle.SeverityInfo
				f.Message = fmt.Sprintf("deprecated version %s received requests since the API server started (%s), none open now", v.Name, lifetime(r))
			default:
				continue
			}
			out = append(out, f)
		}
		return out, nil
	}
}

// unknownUsage is the check when the metrics cannot be read: a note on each
// deprecated served version.
func unknownUsage(why error) DeprecatedUsageFunc {
	return func(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]lifecycle.Finding, error) {
		var out []lifecycle.Finding
		for _, v := range crd.Spec.Versions {
			if v.Served && v.Deprecated {
				out = append(out, lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Severity: lifecycle.SeverityInfo, Version: v.Name,
					Message: fmt.Sprintf("whether clients still use deprecated version %s is not known: %v", v.Name, why)})
			}
		}
		return out, nil
	}
}

func lifetime(r usage.Report) string {
	var parts []string
	for _, line := range r.Evidence() {
		if strings.HasPrefix(line, "lifetime") {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "; ")
}

func orNew(v string) string {
	if v == "" {
		return "the storage version"
	}
	return v
}
