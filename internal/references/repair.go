package references

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Patcher sends a JSON patch (RFC 6902) to one object.
type Patcher interface {
	// PatchJSON patches the object; with dryRun the API server validates
	// the patch and writes nothing (dryRun=All). It returns ErrChanged when
	// a test operation of the patch failed, ErrGone when the object is not
	// there.
	PatchJSON(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte, dryRun bool) error
	// RewriteRelease stores, through Helm's storage driver of rel.Resource,
	// a new revision of rel's release (its latest revision + 1, status
	// deployed) whose manifest is rewrite applied to rel's, and marks rel's
	// record superseded: the record helm upgrade reads then names what
	// rewrite made it name, and rel's record stays as the backup (helm
	// history lists both). It returns ErrChanged, writing nothing, when
	// rel is no longer the release's current record or rewrite rewrites
	// nothing in its manifest (it returns the new manifest and the number
	// of objects it rewrote); ErrGone when the record is gone. With dryRun both
	// writes are server-side dry runs. The new revision is returned.
	RewriteRelease(ctx context.Context, rel Release, description string, rewrite func(manifest string) (string, int), dryRun bool) (int, error)
}

var (
	// ErrChanged is returned when the object no longer holds what the patch tests (another
	// writer changed it, or it was deleted and created again).
	ErrChanged = errors.New("the object changed since it was read")
	// ErrGone is returned when the object was deleted.
	ErrGone = errors.New("the object is gone")
)

// Outcome of one repair.
type Outcome string

const (
	// Rewritten means the reference names the new apiVersion (with a
	// server-side dry run: the API server accepted the patch, wrote nothing).
	Rewritten Outcome = "rewritten"
	// Planned means --dry-run=client: no request was sent.
	Planned Outcome = "planned"
	// Changed means another writer changed the object or the reference since
	// it was read; nothing was written. Find again to see what it holds.
	Changed Outcome = "changed"
	// Gone means the object was deleted since it was read.
	Gone Outcome = "gone"
	// Failed means the API server refused the patch, Message says why.
	Failed Outcome = "failed"
)

// Repair is what repairing one reference did.
type Repair struct {
	Dependent `json:",inline"`
	// To is the apiVersion the reference names after the repair.
	To      string  `json:"to"`
	Outcome Outcome `json:"outcome"`
	Message string  `json:"message,omitempty"`
	// Revision is, for an object of a Helm release record, the release's
	// revision that holds the rewritten manifest (0 with a dry run).
	Revision int `json:"revision,omitempty"`
}

// HowRepaired says how RepairAll rewrites deps: a JSON patch per
// reference that tests the object's uid and the reference first, and
// for Helm release records a new revision whose manifest names the new
// version (the old record kept, superseded).
func HowRepaired(deps []Dependent) string {
	var patch, helm bool
	for _, d := range deps {
		patch = patch || d.Release == nil
		helm = helm || d.Release != nil
	}
	var out []string
	if patch || !helm {
		out = append(out, "a JSON patch each that tests the object's uid and the reference first")
	}
	if helm {
		out = append(out, "a new revision of each Helm release whose manifest names the new version, the old record kept as superseded")
	}
	return strings.Join(out, "; ")
}

// HelmDescription is the description of the revision that RepairAll
// stores for a Helm release (helm history shows it): what was rewritten,
// and that rolling back to an earlier revision brings the old version
// back into the release's current record.
func HelmDescription(from, to string) string {
	return fmt.Sprintf("kubectl crdversion: apiVersion %s rewritten to %s; a rollback to an earlier revision names %s again", from, to, from)
}

// Patch is the JSON patch that rewrites d's reference to name apiVersion
// to: it first tests the dependent's uid, and the reference as Find read
// it — an owner reference's uid and apiVersion at its index, a scale
// target's apiVersion, kind and name — so that it changes nothing when
// the object, or the reference, is not the one Find read (another
// writer's change is never overwritten).
func Patch(d Dependent, to string) []byte {
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": d.UID}}
	at := fmt.Sprintf("/metadata/ownerReferences/%d", d.Index)
	if d.Field == ScaleTarget {
		at = "/spec/scaleTargetRef"
		ops = append(ops, map[string]any{"op": "test", "path": at + "/kind", "value": d.Owner.Kind},
			map[string]any{"op": "test", "path": at + "/name", "value": d.Owner.Name})
	} else {
		ops = append(ops, map[string]any{"op": "test", "path": at + "/uid", "value": d.Owner.UID})
	}
	ops = append(ops, map[string]any{"op": "test", "path": at + "/apiVersion", "value": d.Owner.APIVersion},
		map[string]any{"op": "replace", "path": at + "/apiVersion", "value": to})
	b, err := json.Marshal(ops)
	if err != nil { // strings and UIDs only: cannot happen
		panic(err)
	}
	return b
}

// RepairAll rewrites the reference of each dependent to name apiVersion
// to (GROUP/VERSION of a served version of the CRD, so that the garbage
// collector can resolve the owner again, and an autoscaler its scale
// target), one JSON patch
// per reference (see Patch), in order. dryRun client sends nothing and
// reports each as Planned; server sends each patch as a server-side dry
// run. Only the end of ctx stops it early: the repairs not tried are
// left out of the result, and ctx's error is returned.
func RepairAll(ctx context.Context, p Patcher, deps []Dependent, to string, dryRun lifecycle.DryRun) ([]Repair, error) {
	out := make([]Repair, 0, len(deps))
	for i, d := range deps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		r := Repair{Dependent: d, To: to, Outcome: Rewritten}
		if d.Release != nil && slices.ContainsFunc(deps[:i], func(e Dependent) bool { return e.Release != nil && *e.Release == *d.Release }) {
			// The record was rewritten with the first of its objects.
			first := slices.IndexFunc(out, func(e Repair) bool { return e.Release != nil && *e.Release == *d.Release })
			r.Outcome, r.Message, r.Revision = out[first].Outcome, out[first].Message, out[first].Revision
			out = append(out, r)
			continue
		}
		if dryRun == lifecycle.DryRunClient {
			r.Outcome = Planned
			out = append(out, r)
			continue
		}
		var err error
		if d.Release != nil {
			from, kind := d.Owner.APIVersion, d.Owner.Kind
			r.Revision, err = p.RewriteRelease(ctx, *d.Release, HelmDescription(from, to), func(m string) (string, int) {
				return RewriteManifest(m, from, kind, to)
			}, dryRun == lifecycle.DryRunServer)
		} else {
			err = p.PatchJSON(ctx, d.Resource.GVR(), d.Namespace, d.Name, Patch(d, to), dryRun == lifecycle.DryRunServer)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return out, ctx.Err()
		case errors.Is(err, ErrChanged):
			r.Outcome, r.Message = Changed, err.Error()
		case errors.Is(err, ErrGone):
			r.Outcome, r.Message = Gone, err.Error()
		default:
			r.Outcome, r.Message = Failed, err.Error()
		}
		out = append(out, r)
	}
	return out, nil
}
