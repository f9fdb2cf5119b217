package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// MetricsReader reads the API server's /metrics once, or twice window
// apart (see cluster.Client.MetricsSamples); metrics that cannot be read
// are a *cluster.MetricsError.
type MetricsReader interface {
	MetricsSamples(ctx context.Context, window time.Duration) (first, second *usage.Metrics, err error)
}

// MetricsUsage is the check of deprecated served versions that still
// receive requests, from the API server's metrics
// (apiserver_request_total, apiserver_longrunning_requests,
// apiserver_requested_deprecated_apis), read once for the whole run — or
// twice window apart — when the first CRD with a deprecated served version
// is checked. Per deprecated served version: a warning when requests
// finished during the window or are open (watches), information when
// requests were made only since the API server started, or when the
// verdict is unknown (metrics that cannot be read or compared).
func MetricsUsage(m MetricsReader, window time.Duration) UsageSource {
	return &metricsUsage{reader: m, window: window}
}

type metricsUsage struct {
	reader        MetricsReader
	window        time.Duration
	read          bool
	first, second *usage.Metrics
	unreadable    error // why the metrics could not be read
}

func (u *metricsUsage) Findings(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]lifecycle.Finding, error) {
	var deprecated []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Deprecated {
			deprecated = append(deprecated, v.Name)
		}
	}
	if len(deprecated) == 0 {
		return nil, nil
	}
	if !u.read {
		first, second, err := u.reader.MetricsSamples(ctx, u.window)
		var me *cluster.MetricsError
		switch {
		case errors.As(err, &me):
			u.unreadable = me
		case err != nil:
			return nil, err
		}
		u.read, u.first, u.second = true, first, second
	}
	var out []lifecycle.Finding
	for _, v := range deprecated {
		if u.unreadable != nil {
			out = append(out, unknownUsage(v, u.unreadable.Error()))
			continue
		}
		if f, ok := deprecatedUsage(crd, v, usage.CompareMetrics(cluster.GVR(crd, v), u.first, u.second)); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// deprecatedUsage is the finding for deprecated version v of crd from the
// usage report r; ok is false when r shows no use at all.
func deprecatedUsage(crd *apiextensionsv1.CustomResourceDefinition, v string, r usage.Report) (lifecycle.Finding, bool) {
	f := lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Version: v}
	switch {
	case r.Verdict == usage.InUse:
		evidence := r.Evidence()
		f.Severity = lifecycle.SeverityWarning
		// The last line counts API server instances, which doctor does not
		// read.
		f.Message = fmt.Sprintf("deprecated version %s still receives requests: %s; move those clients to %s", v, strings.Join(evidence[:len(evidence)-1], "; "), orNew(lifecycle.StorageVersion(crd)))
		f = f.WithRun(lifecycle.Crdversion("retire", crd.Name, v).With("dry-run", ""))
	case r.Verdict == usage.Unknown:
		return unknownUsage(v, r.Reason), true
	case len(r.Lifetime) > 0:
		f.Severity = lifecycle.SeverityInfo
		f.Message = fmt.Sprintf("deprecated version %s received requests since the API server started (%s), none open now", v, lifetime(r))
	default:
		return f, false
	}
	return f, true
}

// unknownUsage is the note on deprecated version v when whether clients
// use it is not known, and why.
func unknownUsage(v, why string) lifecycle.Finding {
	return lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Severity: lifecycle.SeverityInfo, Version: v,
		Message: fmt.Sprintf("whether clients still use deprecated version %s is not known: %s", v, why)}
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
