package loss

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// PromotionOptions are MeasurePromotion's options.
type PromotionOptions struct {
	// Options are the client options of the pass (its Progress is started
	// with the version the objects are read at).
	Options
	// Sample limits the objects validated at the new storage version (0:
	// all); every object is still read there.
	Sample int
}

// Promotion is what MeasurePromotion found.
type Promotion struct {
	// From is the version the objects were read at: the storage version,
	// or the new one when the storage version is not served (Blind).
	From string
	// Blind is true when the storage version is not served: the objects
	// cannot be read there, so what the new version drops from them is not
	// measured (only what its own read, validation and round trip show).
	Blind bool
	// Found is the API server's answer for every object: the read at From,
	// the read at the new version, the dry-run update through it, and
	// under Webhook conversion the round trip back (cluster.ObjectsCheck).
	Found *cluster.ObjectsCheck
}

// MeasurePromotion asks the API server what making to the storage version
// of crd would lose, before the flip: every object is read at the current
// storage version and at to, compared field by field, and sent migrate's
// no-op update through to as a server-side dry run, so that conversion,
// pruning, defaulting, validation and UPDATE admission at to all answer.
// Under Webhook conversion each object also makes the round trip from to
// back to the storage version (a lossy webhook shows there). to must be
// served: the API server reads and writes only through served versions.
// The error is the Checker's (a list or a permission that failed).
func MeasurePromotion(ctx context.Context, c ObjectChecker, crd *apiextensionsv1.CustomResourceDefinition, to string, o PromotionOptions) (*Promotion, error) {
	p := &Promotion{From: lifecycle.StorageVersion(crd)}
	if sv := lifecycle.FindVersion(crd, p.From); sv == nil || !sv.Served {
		p.From, p.Blind = to, true
	}
	co := cluster.CheckObjectsOptions{From: p.From, To: to, Sample: o.Sample,
		PageSize: o.PageSize, Concurrency: o.Concurrency, FieldManager: o.FieldManager,
		RoundTrip: p.From != to && crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter}
	if o.Progress != nil {
		update, stop := o.Progress(p.From)
		defer stop()
		co.Progress = func(done, total int64) { update(result.Progress{Done: done, Total: total}) }
	}
	found, err := c.CheckObjects(ctx, crd, co)
	if err != nil {
		return nil, err
	}
	p.Found = found
	return p, nil
}
