package loss

import (
	"context"
	"fmt"
	"time"

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
	// RoundTripper, under Webhook conversion, sends every object read at
	// the new version back through the webhook from the client, so that
	// each is compared whole with its read at the storage version; nil, or
	// a webhook it cannot call, leaves the comparison of keys.
	RoundTripper RoundTripper
	// WebhookTimeout bounds each call of RoundTripper to the webhook.
	WebhookTimeout time.Duration
}

// RoundTripper measures the round trip of every object through a
// conversion webhook before the flip (cluster.Client.WebhookRoundTrip).
type RoundTripper interface {
	WebhookRoundTrip(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, from, to string, pageSize int64, timeout time.Duration) (*cluster.RoundTrips, error)
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
	// the read at the new version, the dry-run update through it (or, by
	// reads, the second list in its place), and under Webhook conversion
	// the round trip back (cluster.ObjectsCheck).
	Found *cluster.ObjectsCheck
	// Design is how the update through the new version was measured:
	// result.DesignReads (a second paged list at it, compared object by
	// object, no dry-run update) or result.DesignDryRun.
	Design string
	// DryRunBecause says why the objects were sent dry-run updates ("" by
	// reads): what can act on the write that a read does not show.
	DryRunBecause string
	// RoundTrip says, under Webhook conversion, how Found.Lost and
	// Found.Changed were judged: "" for whole objects after the round trip
	// (RoundTripper), else why keys were compared across the versions (a
	// renamed field then counts as lost, and a changed value is not seen):
	// the round trip is unknown.
	RoundTrip string
	// Webhook is set under Webhook conversion with the storage version
	// served: the objects made the round trip (RoundTrip says how judged).
	Webhook bool
	// AdmissionPass is set when, under Webhook conversion, something can
	// act on the update through the new version (writeActors): each object
	// read there was also compared whole with its dry-run update's answer.
	AdmissionPass bool
}

// MeasurePromotion asks the API server what making to the storage version
// of crd would lose, before the flip: every object is read at the current
// storage version and at to, compared field by field, and sent migrate's
// no-op update through to as a server-side dry run, so that conversion,
// pruning, defaulting, validation and UPDATE admission at to all answer —
// unless nothing can act on that update that a read at to does not show
// (conversion None, no webhook or admission policy on UPDATE of the
// resource, no transition rule at to, no default of to that a stored
// version lacks: the rules migrate's Measure reads by). Then a second
// paged list at to takes the update's place, object by object, with one
// request per object fewer; each object is still sent as a new object at
// to (a server-side dry-run create), which is stricter than the update.
// Under Webhook conversion each object also makes the round trip from to
// back to the storage version (a lossy webhook shows there). to must be
// served: the API server reads and writes only through served versions.
// The error is the Checker's (a list or a permission that failed).
func MeasurePromotion(ctx context.Context, c Checker, crd *apiextensionsv1.CustomResourceDefinition, to string, o PromotionOptions) (*Promotion, error) {
	p := &Promotion{From: lifecycle.StorageVersion(crd)}
	if sv := lifecycle.FindVersion(crd, p.From); sv == nil || !sv.Served {
		p.From, p.Blind = to, true
	}
	co := cluster.CheckObjectsOptions{From: p.From, To: to, Sample: o.Sample,
		PageSize: o.PageSize, Concurrency: o.Concurrency, FieldManager: o.FieldManager,
		RoundTrip: p.From != to && crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter}
	// Under None the object at the new version has the read's shape
	// (conversion changes apiVersion alone): compared whole, values and
	// metadata too, as migrate compares; under a webhook by the keys
	// present, with the round trip back.
	co.Whole = !p.Blind && !co.RoundTrip && (crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter)
	p.Design, p.DryRunBecause = result.DesignDryRun, promotionActors(ctx, c, crd, to, p.From, p.Blind)
	if p.DryRunBecause == "" && o.Sample > 0 {
		// The second list judges every object it answers; a sample is
		// the way of the dry runs, which judge only the sample.
		p.DryRunBecause = fmt.Sprintf("--sample %d: the sample is sent the dry-run update and create; every other object is read at %s on its own and compared, not validated", o.Sample, to)
	}
	if p.DryRunBecause == "" {
		p.Design, co.Reads = result.DesignReads, true
	}
	if o.Progress != nil {
		update, stop := o.Progress(p.From)
		defer stop()
		co.Progress = func(done, total int64) { update(result.Progress{Done: done, Total: total}) }
	}
	found, err := c.CheckObjects(ctx, crd, co)
	if err != nil {
		return nil, err
	}
	if co.Reads && o.CrossCheck {
		co.Reads, co.Progress = false, nil
		dry, err := c.CheckObjects(ctx, crd, co)
		if err != nil {
			return nil, err
		}
		if d := disagree(found, dry); len(d) > 0 {
			return nil, &Disagreement{CRD: crd.Name, From: p.From, To: to, Objects: d}
		}
	}
	p.Found = found
	if p.Webhook = co.RoundTrip; co.RoundTrip {
		p.RoundTrip = "no client for the webhook"
		if o.RoundTripper != nil {
			rt, err := o.RoundTripper.WebhookRoundTrip(ctx, crd, p.From, to, o.PageSize, o.WebhookTimeout)
			if err == nil {
				// The round trip is the verdict: what a client reading at
				// From gets back once the objects are stored at to.
				found.Lost, found.Changed, p.RoundTrip = rt.Lost, rt.Changed, ""
			} else {
				p.RoundTrip = "the webhook could not be called from this client: " + err.Error()
			}
		}
		// The round trip and the names compare conversions; admission
		// on the update through to (a policy that matches only to's
		// requests included) changes what the run stores as well: each
		// object read at to is also compared whole with the answer of its
		// dry-run update through to, when anything can act on it.
		if v := lifecycle.FindVersion(crd, to); v != nil && writeActors(ctx, c, crd, v, append([]string{p.From}, crd.Status.StoredVersions...)) != "" {
			at, err := c.CheckObjects(ctx, crd, cluster.CheckObjectsOptions{From: to, To: to, Whole: true, UpdateOnly: true,
				PageSize: o.PageSize, Concurrency: o.Concurrency, FieldManager: o.FieldManager})
			if err != nil {
				return nil, err
			}
			found.Lost = append(found.Lost, at.Lost...)
			found.Changed = append(found.Changed, at.Changed...)
			found.Problems = append(found.Problems, at.Problems...)
			found.Unreadable = append(found.Unreadable, at.Unreadable...)
			found.Forbidden = append(found.Forbidden, at.Forbidden...)
			p.AdmissionPass = true
		}
	}
	return p, nil
}

// promotionActors is writeActors for the promotion of to: what can act on
// migrate's update through to once it is the storage version, for objects
// stored at from (the current storage version) or at any version of
// status.storedVersions. A conversion webhook and a storage
// version that cannot be read (blind: nothing to compare a read with)
// take the dry run as well.
func promotionActors(ctx context.Context, c Checker, crd *apiextensionsv1.CustomResourceDefinition, to, from string, blind bool) string {
	switch {
	case blind:
		return "the storage version " + from + " is not served: the objects are read at " + to + " alone, and only the write shows what " + to + " refuses"
	case crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter:
		return "Webhook conversion: what the webhook gives back of an object stored through " + to + " answers only to a write"
	}
	v := lifecycle.FindVersion(crd, to)
	if v == nil {
		return to + " is not a version of " + crd.Name
	}
	stored := append([]string{from}, crd.Status.StoredVersions...)
	return writeActors(ctx, c, crd, v, stored)
}
