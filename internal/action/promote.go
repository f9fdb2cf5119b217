package action

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// PromoteCluster is what promote-storage reads from the cluster.
type PromoteCluster interface {
	preflight.ServiceReader
	// CheckObjects reads every object at the current and the new storage
	// version and dry-runs migrate's no-op update through the new one (see
	// cluster.Client.CheckObjects).
	CheckObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error)
	// Missing asks the API server which of needs the user lacks.
	Missing(ctx context.Context, needs []access.Need) (missing []access.Need, checked bool)
	// AdmissionRules are the cluster's webhook and policy rules, which
	// decide whether reads measure the promotion (loss.Checker).
	AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error)
	// CRDAt reads the CRD as it was at an object's last write (loss.History).
	loss.History
	// WebhookRoundTrip sends every object through the conversion webhook
	// and back from the client (loss.RoundTripper).
	loss.RoundTripper
}

// PromoteOptions are the inputs of promote-storage.
type PromoteOptions struct {
	// Version becomes the storage version.
	Version string
	// Pruning accepts losses: every one (All: fields the schemas prune
	// under conversion None, fields and values the objects lose, objects
	// not measured because the storage version is not served), or those at
	// and under Paths, the rest still refused (--allow-pruning=PATHS).
	Pruning edit.Pruning
	// VersionOrder is the order of the CRD's versions the user gave,
	// oldest first (--version-order; see lifecycle.Order).
	VersionOrder []string
	// Sample limits the objects validated at Version (0: all); every
	// object is still read at it.
	Sample int
	// ChunkSize is the page size when reading the objects.
	ChunkSize int64
	// WebhookTimeout bounds the wait for a Service webhook's answer.
	WebhookTimeout time.Duration
	// Write is true when the CRD will be written (not a client dry run):
	// the permission check then covers the CRD update too.
	Write bool
	// FieldManager names the writer of the objects' dry-run updates.
	FieldManager string
	// Concurrency bounds the objects checked at once (0: the default).
	Concurrency int
	// Progress, when set, is told where the object check stands.
	Progress func(migrate.Progress)
	// CrossCheck measures the objects by dry runs as well wherever reads
	// measured them, and fails with a *loss.Disagreement when the two
	// verdicts differ (loss.Options.CrossCheck; for tests).
	CrossCheck bool
}

// PromoteStorage is the preflight of making o.Version the storage version
// of the target: the rules of edit.PromoteStorage; then, when the cluster
// can be read, a conversion webhook behind a Service is checked first (the
// API server cannot convert without it); then every object is read at the
// new version and at the current one, compared field by field, and sent
// migrate's no-op update through the new version as a server-side dry run.
// Before that, the permissions those requests need are checked (a missing
// one is refused as such). c may be nil (manifest mode without a cluster).
func PromoteStorage(ctx context.Context, c PromoteCluster, t *Target, o PromoteOptions) (*edit.Result, error) {
	if err := lifecycle.CheckVersionOrder(t.CRD, o.VersionOrder); err != nil {
		return nil, err
	}
	r := edit.PromoteStorage(t.CRD, o.Version, o.Pruning, o.VersionOrder)
	if r.NoOp || !onlyPredictedLoss(r.Checks.Failed()) || c == nil || !t.live() {
		return r, nil
	}
	if wh := lifecycle.ConversionWebhook(r.Edited); wh != nil && wh.ClientConfig.Service != nil {
		probe := &preflight.Probe{Desired: lifecycle.GroupVersion(t.CRD, o.Version), Sample: preflight.SampleObject(t.CRD, lifecycle.StorageVersion(t.CRD), "crdversion-preflight-sample")}
		r.Checks = append(r.Checks, preflight.NewWebhooks(c, o.WebhookTimeout).Service(ctx, wh, probe)...)
	}
	switch v := lifecycle.FindVersion(t.Live, o.Version); {
	case !onlyPredictedLoss(r.Checks.Failed()):
		// The API server cannot call the webhook: reading the objects at
		// the new version would only repeat that.
	case v == nil || !v.Served:
		r.Checks = append(r.Checks, edit.Check{Name: "ObjectsValid", Outcome: edit.Skip,
			Message: fmt.Sprintf("objects not checked at %s: the cluster does not serve it yet", o.Version)})
	default:
		if missing, _ := c.Missing(ctx, access.PromoteStorage(t.Live, o.Write)); len(missing) > 0 {
			return nil, &access.MissingError{Operation: "promote-storage", CRD: t.Live.Name, Missing: missing}
		}
		lo := loss.PromotionOptions{Sample: o.Sample, RoundTripper: c, WebhookTimeout: o.WebhookTimeout, Options: loss.Options{PageSize: o.ChunkSize,
			Concurrency: o.Concurrency, FieldManager: o.FieldManager, CrossCheck: o.CrossCheck}}
		if o.Progress != nil {
			lo.Progress = func(string) (func(migrate.Progress), func()) { return o.Progress, func() {} }
		}
		p, err := loss.MeasurePromotion(ctx, c, t.Live, o.Version, lo)
		if err != nil {
			return nil, err
		}
		if p.Blind {
			// The objects cannot be read at the storage version: what the
			// new version drops is unknown.
			from := lifecycle.StorageVersion(t.Live)
			outcome, how := edit.Fail, "serve it (kubectl crdversion serve "+t.Live.Name+" "+from+") and re-run to measure, or pass --allow-pruning to promote without measuring"
			if o.Pruning.All {
				outcome, how = edit.Warn, "--allow-pruning"
			}
			r.Checks = append(r.Checks, edit.Check{Name: "FieldsKept", Outcome: outcome,
				Message: fmt.Sprintf("not measured whether %s drops fields the objects have: the storage version %s is not served, so they cannot be read there; %s", o.Version, from, how)})
		}
		r.Checks = append(r.Checks, preflight.Objects(p.Found, o.Pruning)...)
		if c := unmatchedPruning(t.Live, o.Version, p.Found, o.Pruning); c != nil {
			r.Checks = append(r.Checks, *c)
		}
		if p.Found.ListError == "" {
			r.Checks = append(r.Checks, measuredCheck(p, o.Pruning.All))
		}
	}
	return r, nil
}

// unmatchedPruning is the warning PruningPathsUnmatched for the paths of
// p that accept nothing: no object read loses or changes a field under
// them, and conversion None prunes none there (a misspelt path is taken
// as typed and accepts nothing; every loss still fails). nil when each
// path accepts something, or p has none.
func unmatchedPruning(crd *apiextensionsv1.CustomResourceDefinition, version string, found *cluster.ObjectsCheck, p edit.Pruning) *edit.Check {
	if p.All || len(p.Paths) == 0 {
		return nil
	}
	var took []cluster.ObjectLoss
	for _, ls := range [][]cluster.ObjectLoss{found.Lost, found.Changed, found.NotRoundTripped} {
		_, took = loss.Accept(ls, p.Paths, took)
	}
	if !lifecycle.UsesWebhook(crd) {
		brought, _ := lifecycle.NoneConversionLossesOf(crd, version)
		for _, l := range brought {
			took = append(took, cluster.ObjectLoss{Paths: []string{l.Path}})
		}
	}
	idle := loss.Unmatched(p.Paths, took)
	if len(idle) == 0 {
		return nil
	}
	return &edit.Check{Name: "PruningPathsUnmatched", Outcome: edit.Warn,
		Message: fmt.Sprintf("--allow-pruning path(s) %s match nothing the objects lose or change at %s, nor a field conversion None prunes: they accept nothing (a misspelt path?)", strings.Join(idle, ", "), version)}
}

// measuredCheck is the check LossMeasurement, which says how the update
// through the new version was measured: by reads (how many objects the
// second list answered; the others, written between the lists, got the
// dry run) or by dry runs, and why. Under Webhook conversion, a round
// trip this client could not make is unknown, and unknown fails unless
// allowPruning (--allow-pruning: every loss accepted) makes it a warning.
func measuredCheck(p *loss.Promotion, allowPruning bool) edit.Check {
	c := designCheck(p)
	if p.AdmissionPass {
		c.Message += fmt.Sprintf("; something acts on the update through %s, so each object read at %s was also sent it as a dry run and compared whole with the answer", p.Found.To, p.Found.To)
	}
	if p.Webhook {
		if p.RoundTrip == "" {
			c.Message += fmt.Sprintf("; under Webhook conversion each object read at %s was sent back to %s through the webhook by this client and compared whole with its read at %s (what a client reading at %s gets once the objects are stored at %s)", p.Found.To, p.Found.From, p.Found.From, p.Found.From, p.Found.To)
		} else {
			c.Outcome = edit.Fail
			how := "run promote-storage where the webhook can be called (for a webhook behind a Service, inside the cluster network, where its endpoints are reachable), or pass --allow-pruning to promote on the comparison of field names"
			if allowPruning {
				c.Outcome, how = edit.Warn, "--allow-pruning"
			}
			c.Message += fmt.Sprintf("; under Webhook conversion the round trip back to %s is NOT MEASURED (%s): the objects at %s and at %s were compared by the names of their fields only, so a value the webhook changes on the way back is not seen; %s", p.Found.From, p.RoundTrip, p.Found.From, p.Found.To, how)
		}
	}
	return c
}

// designCheck is measuredCheck's check before the round trip is said.
func designCheck(p *loss.Promotion) edit.Check {
	f := p.Found
	if p.Design == result.DesignReads {
		return edit.Check{Name: "LossMeasurement", Outcome: edit.Pass,
			Message: fmt.Sprintf("measured by reads: %d of %d object(s) listed at %s and at %s and compared, %d sent the dry-run update (written between the lists, or refused as new objects); nothing acts on the update that a read does not show (conversion None, no webhook or admission policy on UPDATE, no transition rule, no default of %s that a stored version lacks)",
				f.ReadAtTo, f.Listed, f.From, f.To, f.Validated, f.To)}
	}
	return edit.Check{Name: "LossMeasurement", Outcome: edit.Pass,
		Message: fmt.Sprintf("measured by dry runs: %d object(s) sent the dry-run update through %s, because %s", f.Validated, f.To, p.DryRunBecause)}
}

// onlyPredictedLoss reports whether every failed check is the schemas'
// prediction that conversion None prunes fields (none failed included):
// the objects are still read at both versions then, so that the refusal
// names the objects and the paths they would lose, not only the schema
// paths where loss is possible.
func onlyPredictedLoss(failed edit.Checks) bool {
	for _, c := range failed {
		if c.Name != edit.CheckNoneConversionPruning {
			return false
		}
	}
	return true
}
