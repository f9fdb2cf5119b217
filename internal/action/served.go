package action

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// UsageReader measures how clients use a group/version/resource.
type UsageReader interface {
	// ClientUsage measures requests to gvr over window (see
	// cluster.Client.ClientUsage); a *cluster.MetricsError when the
	// metrics cannot be read.
	ClientUsage(ctx context.Context, gvr schema.GroupVersionResource, window time.Duration) (usage.Report, error)
}

// UsageOptions are the inputs of the client-usage check.
type UsageOptions struct {
	// Window is how long requests are counted.
	Window time.Duration
	// Skip skips the check (--skip-usage-check); the output records it.
	Skip bool
	// Measuring, when set, is called before a measurement that takes Window.
	Measuring func(groupVersion string, window time.Duration)
}

// SetServed is the preflight of serving (served) or unserving a version of
// the target: the rules of edit.SetServed and, to unserve, the check that
// no client requests the version (the API server's metrics over
// u.Window). c may be nil (manifest mode without a cluster).
func SetServed(ctx context.Context, c UsageReader, t *Target, version string, served bool, u UsageOptions) (*edit.Result, error) {
	r := edit.SetServed(t.CRD, version, served)
	if served || r.NoOp || len(r.Checks.Failed()) > 0 {
		return r, nil
	}
	gv := lifecycle.GroupVersion(t.CRD, version)
	switch {
	case u.Skip:
		r.Checks = append(r.Checks, preflight.ClientUsageSkipped(gv))
		return r, nil
	case c == nil || !t.live():
		r.Checks = append(r.Checks, edit.Check{Name: preflight.CheckClientUsage, Outcome: edit.Skip, Message: "client usage of " + gv + " not checked: " + t.LiveSkip})
		return r, nil
	}
	if u.Measuring != nil {
		u.Measuring(gv, u.Window)
	}
	rep, err := c.ClientUsage(ctx, cluster.GVR(t.CRD, version), u.Window)
	var me *cluster.MetricsError
	switch {
	case errors.As(err, &me):
		r.Checks = append(r.Checks, preflight.ClientUsageUnmeasured(gv, me))
	case err != nil:
		return nil, err
	default:
		r.Checks = append(r.Checks, preflight.ClientUsage(rep, gv))
	}
	return r, nil
}

// Deprecate is the preflight of deprecating a version of the target
// (warning: the deprecationWarning, nil for the API server's default), or
// of undoing it; see edit.Deprecate. It needs nothing from the cluster.
func Deprecate(t *Target, version string, warning *string, undo bool) *edit.Result {
	return edit.Deprecate(t.CRD, version, warning, undo)
}
