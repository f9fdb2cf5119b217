package cluster

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// ObjectProblem is an object that a check at some version failed for.
type ObjectProblem struct {
	// Object is "namespace/name", or "name" for cluster-scoped objects.
	Object string `json:"object"`
	// Message is the API server's message.
	Message string `json:"message"`
}

func (p ObjectProblem) String() string { return p.Object + ": " + p.Message }

// ProblemLines names the objects of ps with the API server's answer, one
// line per answer: objects refused for the same reason (a webhook's or a
// policy's denial) share a line that names every one. The API server's
// messages name the object (`widgets.example.com "w1" is forbidden: …`):
// answers that differ only there are the same, and their shared line says
// "<name>" in its place.
func ProblemLines(ps []ObjectProblem) []string {
	var order []string
	objects := map[string][]string{}
	first := map[string]string{}
	for _, p := range ps {
		name := p.Object[strings.LastIndex(p.Object, "/")+1:]
		key := strings.ReplaceAll(p.Message, strconv.Quote(name), `"<name>"`)
		if _, seen := objects[key]; !seen {
			order = append(order, key)
			first[key] = p.Message
		}
		objects[key] = append(objects[key], p.Object)
	}
	out := make([]string, len(order))
	for i, k := range order {
		m := k
		if len(objects[k]) == 1 {
			m = first[k]
		}
		out[i] = strings.Join(objects[k], ", ") + ": " + m
	}
	return out
}

// ObjectLoss is an object that has fields when read at one version and
// not when read (or written) through another: the data a step that
// rewrites it there loses.
type ObjectLoss struct {
	Object string `json:"object"`
	// Paths are the JSON paths present at the old version and absent at
	// the new one (".spec.image", ".spec.labels.env", ".spec.ports[2]").
	Paths []string `json:"paths"`
}

// ObjectWrite is an object's last write: its resourceVersion (the etcd
// revision of the write) and the paths a check names in it.
type ObjectWrite struct {
	Object          string `json:"object"`
	ResourceVersion string `json:"resourceVersion"`
	// WrittenAt is the latest time its managedFields entries record
	// (LastWritten); zero without one.
	WrittenAt time.Time `json:"writtenAt,omitzero"`
	Paths     []string  `json:"paths"`
}

// LastWritten is the latest time u's managedFields entries record (each
// entry's time is its manager's last change, to the second); zero when
// none records one.
func LastWritten(u metav1.Object) time.Time {
	var last time.Time
	for _, e := range u.GetManagedFields() {
		if e.Time != nil && e.Time.After(last) {
			last = e.Time.Time
		}
	}
	return last
}

func (l ObjectLoss) String() string { return l.Object + ": " + strings.Join(l.Paths, ", ") }

// DefaultCheckConcurrency is the number of objects CheckObjects checks at
// once when CheckObjectsOptions.Concurrency is not set.
const DefaultCheckConcurrency = 16

// CheckObjectsOptions are the inputs of CheckObjects.
type CheckObjectsOptions struct {
	// From is the version the objects are read at (listed, paged): the
	// version whose content the step must keep — the current storage
	// version for promote-storage, a stored version for migrate.
	From string
	// To is the version the step writes the objects through.
	To string
	// Sample limits the objects sent the dry-run update and create (0: all); the
	// others are only read at To (a GET), so that every object is still
	// compared.
	Sample int
	// PageSize is the page size of the list at From.
	PageSize int64
	// Concurrency bounds the objects checked at once
	// (DefaultCheckConcurrency when 0).
	Concurrency int
	// FieldManager names the writer of the dry-run updates, as the step's
	// own writes will.
	FieldManager string
	// UpdateOnly leaves out the dry-run create: the check of a step that
	// writes every object as an update and none as new (migrate).
	UpdateOnly bool
	// Through, when set, is the version the dry-run update is sent through
	// instead of To. With a conversion webhook and the objects stored at
	// From, an update through From is stored at the storage version and
	// its answer converted back: the round trip From -> storage -> From,
	// which is what a migration keeps of the object, seen at From. The
	// same dry run is then also sent through To, whose schema, rules and
	// admission judge the write (a refusal is a Problem).
	Through string
	// Whole compares the object read at From with the dry-run update's
	// answer as whole objects (CompareObjects: values and metadata too)
	// instead of by the keys present (LostPaths). The two must have the
	// same shape: Through is From, or conversion is None.
	Whole bool
	// RoundTrip, with a conversion webhook and From the storage version,
	// also reads each object at To (a GET: From -> To, what a migration
	// will store) and compares it with the dry-run update's answer, which
	// the API server encoded at the storage version and decoded back (To ->
	// From -> To): a field of the first missing from the second does not
	// come back through From (NotRoundTripped). The direct read is then the
	// one compared with From for Lost.
	RoundTrip bool
	// Recorded are paths (schema.Prune's notation) to look for in each
	// object's managedFields: a field recorded at or under one of them that
	// the object at To lacks is data that no read shows (RecordedMissing),
	// and an object without managedFields is Unrecorded.
	Recorded []string
	// RecordedThrough limits Recorded to the managedFields entries written
	// through this group/version ("" for all; see RecordedMissingThrough).
	RecordedThrough string
	// defaulted are the paths any version's schema defaults (set by
	// CheckObjects for Unaccounted).
	defaulted []string
	// Reads compares each object read at From with the same object read
	// at To — a second paged list beside the first, joined by key — in
	// place of the dry-run update: the API server converts, prunes and
	// defaults an object read through a version as it does the object a
	// write through that version stores, so without UPDATE admission and
	// transition rules on the write the two agree (loss.Measure decides
	// when; its cross-check and the differential e2e test hold it to the
	// dry run). An object the two lists do not show at the same uid and
	// resourceVersion (written or created between them, or missing at
	// To) gets the dry-run update instead. Not with Through (other than
	// To), RoundTrip or Sample.
	Reads bool
	// Progress, when set, is called after every object with the objects
	// done and the total known (0 while unknown). It must be safe for
	// concurrent use.
	Progress func(done, total int64)
}

// ObjectsCheck is what CheckObjects found.
type ObjectsCheck struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Listed is the number of objects read at From.
	Listed int `json:"listed"`
	// Validated is the number of objects sent the dry-run update.
	Validated int `json:"validated"`
	// ReadAtTo is the number of objects compared with their read at To
	// instead (CheckObjectsOptions.Reads).
	ReadAtTo int `json:"readAtTo,omitempty"`
	// ListError is the API server's message when the objects could not
	// be listed at From.
	ListError string `json:"listError,omitempty"`
	// Problems are the objects whose dry-run update through To the API
	// server refused (validation, transition rules, admission).
	Problems []ObjectProblem `json:"problems,omitempty"`
	// InvalidAsNew are the objects whose update the API server accepted
	// but which it refuses as new objects at To (a server-side dry-run
	// create under its own name: the whole schema and its CEL rules,
	// without the ratcheting that lets an update keep an unchanged invalid
	// field).
	InvalidAsNew []ObjectProblem `json:"invalidAsNew,omitempty"`
	// NotCheckedAsNew are the objects whose dry-run create the API server
	// could not judge: their namespace is being deleted, and it creates
	// nothing there (the objects go with it). Their dry-run update was
	// accepted.
	NotCheckedAsNew []ObjectProblem `json:"notCheckedAsNew,omitempty"`
	// Unreadable are the objects that could not be read at To (a
	// conversion that fails).
	Unreadable []ObjectProblem `json:"unreadable,omitempty"`
	// Forbidden are the objects whose check the API server refused for a
	// missing permission: not judged.
	Forbidden []ObjectProblem `json:"forbidden,omitempty"`
	// Lost are the objects with fields present at From and absent at To.
	Lost []ObjectLoss `json:"lost,omitempty"`
	// Changed are the objects whose dry-run update changes values (Whole).
	Changed []ObjectLoss `json:"changed,omitempty"`
	// Set are the objects whose dry-run update sets fields they lack or
	// hold as null: defaults, admission (Whole).
	Set []ObjectLoss `json:"set,omitempty"`
	// NullsDropped are the objects whose explicit nulls the dry-run
	// update drops (Whole).
	NullsDropped []ObjectLoss `json:"nullsDropped,omitempty"`
	// GenerationChanged are the objects whose metadata.generation the
	// dry-run update changes (Whole): controllers reconcile them again.
	GenerationChanged []string `json:"generationChanged,omitempty"`
	// NotRoundTripped are the objects with fields at To that do not come
	// back from a conversion to From and back (see
	// CheckObjectsOptions.RoundTrip).
	NotRoundTripped []ObjectLoss `json:"notRoundTripped,omitempty"`
	// RecordedMissing are the objects whose managedFields record fields
	// under CheckObjectsOptions.Recorded that they lack at To (see
	// RecordedMissing).
	RecordedMissing []ObjectLoss `json:"recordedMissing,omitempty"`
	// Unrecorded are the objects without managedFields, when
	// CheckObjectsOptions.Recorded is set: what they were written with is
	// not known.
	Unrecorded []string `json:"unrecorded,omitempty"`
	// WholeRecorded are the objects that hold data their managedFields
	// record only as a whole (WholeRecorded), when
	// CheckObjectsOptions.Recorded is set: with the resourceVersion of
	// their last write, for the CRD as it was then (Client.CRDAt).
	WholeRecorded []ObjectWrite `json:"wholeRecorded,omitempty"`
	// ElapsedSeconds and ObjectsPerSecond time the check.
	ElapsedSeconds   float64 `json:"elapsedSeconds"`
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
}

// CheckObjects reads every object of crd at o.From (a paged list) and
// checks it on the path a step that rewrites it through o.To takes: it
// sends what migrate sends — a no-op JSON merge patch naming the object's
// uid and resourceVersion, through o.To — as a server-side dry run
// (dryRun=All), so that conversion, pruning, the schema with its ratcheting,
// CEL transition rules (oldSelf) and UPDATE admission (webhooks and
// ValidatingAdmissionPolicies) all answer. The API server's answer is the
// object as it would be stored through o.To; every field of the object read
// at o.From that it lacks is recorded as lost. Objects past o.Sample, and
// objects the dry run refused, are read at o.To instead (a GET) and compared
// the same way. An object whose update was accepted is also sent, as the
// preflight did before, a server-side dry-run create at o.To under
// its own name: the whole schema without ratcheting (InvalidAsNew; not
// with o.UpdateOnly). Up to o.Concurrency objects are checked at once.
// Nothing is persisted.
func (c *Client) CheckObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, o CheckObjectsOptions) (*ObjectsCheck, error) {
	start := time.Now()
	for i := range crd.Spec.Versions {
		o.defaulted = append(o.defaulted, schema.DefaultPaths(schema.Of(&crd.Spec.Versions[i]))...)
	}
	from, to := c.Dynamic.Resource(GVR(crd, o.From)), c.Dynamic.Resource(GVR(crd, o.To))
	through := to
	if o.Through != "" {
		through = c.Dynamic.Resource(GVR(crd, o.Through))
	}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	at := func(res dynamic.NamespaceableResourceInterface, ns string) dynamic.ResourceInterface {
		if namespaced {
			return res.Namespace(ns)
		}
		return res
	}
	var total, done atomic.Int64
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := from.List(ctx, opts)
		if err == nil && opts.Continue == "" && l.GetRemainingItemCount() != nil {
			total.Store(int64(len(l.Items)) + *l.GetRemainingItemCount())
		}
		return l, err
	})
	p.PageSize = o.PageSize
	out := &ObjectsCheck{From: o.From, To: o.To}
	err := WhenServedBy(ctx, crd, func() error {
		if _, err := to.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return err
		}
		_, err := from.List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	limit := o.Concurrency
	if limit <= 0 {
		limit = DefaultCheckConcurrency
	}
	var mu sync.Mutex
	if err == nil {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(limit)
		var reads *listStream
		if o.Reads && (o.Through == "" || o.Through == o.To) && !o.RoundTrip && o.Sample <= 0 {
			lctx, cancel := context.WithCancel(gctx)
			defer cancel()
			reads = streamList(lctx, to, o.PageSize)
		}
		err = p.EachListItem(gctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			u := obj.(*unstructured.Unstructured)
			var read *unstructured.Unstructured
			if reads != nil {
				read = reads.find(u)
			}
			validate := read == nil && (o.Sample <= 0 || out.Validated < o.Sample)
			out.Listed++
			if validate {
				out.Validated++
			}
			g.Go(func() error {
				ns := u.GetNamespace()
				var f objectFinding
				var err error
				if read != nil {
					f, err = c.judgeRead(gctx, at(from, ns), at(to, ns), at(through, ns), u, read, o)
				} else {
					f, err = c.checkObject(gctx, at(from, ns), at(to, ns), at(through, ns), u, validate, o)
				}
				if err != nil {
					return err
				}
				mu.Lock()
				switch {
				case read != nil && f.dryRun:
					out.Validated++
				case read != nil:
					out.ReadAtTo++
				}
				f.into(out, objectName(u))
				mu.Unlock()
				n := done.Add(1)
				if o.Progress != nil {
					o.Progress(n, max(total.Load(), n))
				}
				return nil
			})
			return nil
		})
		if werr := g.Wait(); err == nil {
			err = werr
		}
	}
	if err != nil {
		if _, answered := err.(apierrors.APIStatus); !answered || ctx.Err() != nil {
			return nil, err
		}
		out.ListError = err.Error()
	}
	for _, s := range [][]ObjectProblem{out.Problems, out.InvalidAsNew, out.NotCheckedAsNew, out.Unreadable, out.Forbidden} {
		sort.Slice(s, func(i, j int) bool { return s[i].Object < s[j].Object })
	}
	sort.Strings(out.Unrecorded)
	sort.Slice(out.WholeRecorded, func(i, j int) bool { return out.WholeRecorded[i].Object < out.WholeRecorded[j].Object })
	sort.Strings(out.GenerationChanged)
	for _, s := range [][]ObjectLoss{out.Lost, out.Changed, out.Set, out.NullsDropped, out.NotRoundTripped, out.RecordedMissing} {
		sort.Slice(s, func(i, j int) bool { return s[i].Object < s[j].Object })
	}
	out.ElapsedSeconds = time.Since(start).Seconds()
	if out.ElapsedSeconds > 0 {
		out.ObjectsPerSecond = float64(out.Listed) / out.ElapsedSeconds
	}
	return out, nil
}

// objectFinding is what checkObject found for one object.
type objectFinding struct {
	deleted                                                   bool
	invalid, invalidNew, notCheckedNew, unreadable, forbidden string
	lost, notBack, recordedMissing                            []string
	changes                                                   Changes
	unrecorded                                                bool
	// whole are the paths WholeRecorded names, of the write at rv.
	whole     []string
	rv        string
	writtenAt time.Time
	// dryRun is set by judgeRead when it sent the dry-run update after
	// all (an object invalid as new).
	dryRun bool
}

func (f objectFinding) into(out *ObjectsCheck, name string) {
	switch {
	case f.deleted:
		return
	case f.forbidden != "":
		out.Forbidden = append(out.Forbidden, ObjectProblem{Object: name, Message: f.forbidden})
		return
	}
	if f.invalid != "" {
		out.Problems = append(out.Problems, ObjectProblem{Object: name, Message: f.invalid})
	}
	if f.invalidNew != "" {
		out.InvalidAsNew = append(out.InvalidAsNew, ObjectProblem{Object: name, Message: f.invalidNew})
	}
	if f.notCheckedNew != "" {
		out.NotCheckedAsNew = append(out.NotCheckedAsNew, ObjectProblem{Object: name, Message: f.notCheckedNew})
	}
	if f.unreadable != "" {
		out.Unreadable = append(out.Unreadable, ObjectProblem{Object: name, Message: f.unreadable})
	}
	if len(f.lost) > 0 {
		out.Lost = append(out.Lost, ObjectLoss{Object: name, Paths: f.lost})
	}
	for _, l := range []struct {
		to    *[]ObjectLoss
		paths []string
	}{{&out.Changed, f.changes.Changed}, {&out.Set, f.changes.Set}, {&out.NullsDropped, f.changes.NullsDropped}} {
		if len(l.paths) > 0 {
			*l.to = append(*l.to, ObjectLoss{Object: name, Paths: l.paths})
		}
	}
	if f.changes.GenerationChanged {
		out.GenerationChanged = append(out.GenerationChanged, name)
	}
	if len(f.notBack) > 0 {
		out.NotRoundTripped = append(out.NotRoundTripped, ObjectLoss{Object: name, Paths: f.notBack})
	}
	if len(f.recordedMissing) > 0 {
		out.RecordedMissing = append(out.RecordedMissing, ObjectLoss{Object: name, Paths: f.recordedMissing})
	}
	if f.unrecorded {
		out.Unrecorded = append(out.Unrecorded, name)
	}
	if len(f.whole) > 0 {
		out.WholeRecorded = append(out.WholeRecorded, ObjectWrite{Object: name, ResourceVersion: f.rv, WrittenAt: f.writtenAt, Paths: f.whole})
	}
}

// checkObject checks u, read at from: the dry-run no-op update through
// through (to unless o.Through is set; when validate), else or when
// refused a read at to; then the comparison (whole objects with o.Whole,
// when the update was answered).
// An object changed meanwhile is read again at from (a few times); one
// deleted meanwhile is skipped. Errors the API server did not answer (the
// connection, the context) are returned.
func (c *Client) checkObject(ctx context.Context, from, to, through dynamic.ResourceInterface, u *unstructured.Unstructured, validate bool, o CheckObjectsOptions) (objectFinding, error) {
	fieldManager := o.FieldManager
	var f objectFinding
	var at *unstructured.Unstructured
	if validate {
		for attempt := 0; ; attempt++ {
			got, err := noOpDryRun(ctx, through, u, fieldManager)
			if err == nil {
				at = got
				break
			}
			if _, answered := err.(apierrors.APIStatus); !answered {
				return f, err
			}
			switch {
			case apierrors.IsNotFound(err):
				f.deleted = true
				return f, nil
			case apierrors.IsForbidden(err):
				f.forbidden = apiMessage(err)
				return f, nil
			case apierrors.IsConflict(err) && attempt < 3:
				fresh, gerr := from.Get(ctx, u.GetName(), metav1.GetOptions{})
				if apierrors.IsNotFound(gerr) {
					f.deleted = true
					return f, nil
				}
				if gerr != nil {
					return f, gerr
				}
				u = fresh
				continue
			}
			if notJudged(err) {
				// A conflict that kept coming back, or an API server
				// that did not get to judge the write (a timeout, a
				// 5xx): unknown, not a refusal of the object.
				f.unreadable = "not judged: " + apiMessage(err)
				return f, nil
			}
			f.invalid = apiMessage(err)
			break
		}
	}
	// atTo is the answer at To: the object a new one at To must equal.
	atTo := at
	if at != nil && o.Through != "" && o.Through != o.To {
		// The update went through another version than the one a
		// migration writes through, and the API server validates a custom
		// resource with the schema (and admits it with the rules) of the
		// version a request goes through: the storage version's rules
		// answer only to the same dry run through it.
		got, err := noOpDryRun(ctx, to, u, fieldManager)
		if _, answered := err.(apierrors.APIStatus); err != nil && !answered {
			return f, err
		}
		atTo = got
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			f.deleted = true
			return f, nil
		case apierrors.IsForbidden(err):
			f.forbidden = apiMessage(err)
			return f, nil
		case apierrors.IsConflict(err):
			// Written since it was read; the round trip measured the
			// version read, the run's own write sees the rest.
		case notJudged(err):
			f.unreadable = "not judged: " + apiMessage(err)
			return f, nil
		default:
			f.invalid = apiMessage(err)
		}
	}
	if atTo != nil && !o.UpdateOnly {
		// Accepted as migrate's update: also as a new object?
		if err := createDryRun(ctx, to, atTo, fieldManager, &f); err != nil || f.forbidden != "" {
			return f, err
		}
	}
	if at != nil && o.RoundTrip {
		direct, err := to.Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			f.deleted = true
			return f, nil
		case err != nil:
			if _, answered := err.(apierrors.APIStatus); !answered {
				return f, err
			}
			f.unreadable = apiMessage(err)
			return f, nil
		}
		f.notBack = LostPaths(direct.Object, at.Object)
		at = direct
	}
	answered := at != nil
	if at == nil {
		got, err := to.Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			f.deleted = f.invalid == ""
			return f, nil
		case apierrors.IsForbidden(err):
			f.forbidden = apiMessage(err)
			return f, nil
		case err != nil:
			if _, answered := err.(apierrors.APIStatus); !answered {
				return f, err
			}
			// The object cannot be read at to: that is why the dry
			// run failed too, when it did; reported once.
			f.unreadable, f.invalid = apiMessage(err), ""
			return f, nil
		}
		at = got
	}
	compareFinding(&f, u, at, answered, o)
	return f, nil
}

// createDryRun sends at, an object accepted as an update, as a new object
// under its own name (a server-side dry-run create through to) and records
// in f what the API server said: invalid as new, not judged (a namespace
// being deleted), or forbidden. Errors the API server did not answer are
// returned.
func createDryRun(ctx context.Context, to dynamic.ResourceInterface, at *unstructured.Unstructured, fieldManager string, f *objectFinding) error {
	_, err := to.Create(ctx, AsNewObject(at), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
	if err == nil {
		return nil
	}
	if _, answered := err.(apierrors.APIStatus); !answered {
		return err
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		// The object's own name: the API server looks in storage only
		// after the schema, its rules and admission accepted the object
		// as new.
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Forbidden, but not for a permission: nothing is created in a
		// namespace being deleted.
		f.notCheckedNew = apiMessage(err)
	case apierrors.IsForbidden(err):
		f.forbidden = apiMessage(err)
	default:
		f.invalidNew = apiMessage(err)
	}
	return nil
}

// compareFinding compares u, read at From, with at, the object at To (the
// dry-run update's answer when answered, else a read), and records in f
// what a rewrite loses: with o.Whole the whole objects (values and
// metadata too), else the keys present; and, with o.Recorded, the fields
// u's managedFields record that at lacks.
func compareFinding(f *objectFinding, u, at *unstructured.Unstructured, answered bool, o CheckObjectsOptions) {
	switch {
	case o.Whole && answered:
		f.changes = CompareObjects(u.Object, at.Object)
		f.lost, f.changes.Dropped = f.changes.Dropped, nil
	case o.Whole && f.invalid != "":
		// Refused: the refusal is the finding; the read at to has
		// another shape than u when through is not to.
	default:
		f.lost = LostPaths(u.Object, at.Object)
	}
	if len(o.Recorded) > 0 {
		// One parse of the managedFields for the three judgements.
		entries := parseRecorded(u)
		var recorded bool
		f.recordedMissing, recorded = recordedMissing(entries, u, at.Object, o.Recorded, o.RecordedThrough)
		f.unrecorded = !recorded
		// Every entry: one written through another version names data
		// the read at From holds at the same path just as well, and the
		// CRD's history judges it precisely. A top-level field holding
		// data no entry records counts as recorded as a whole: those
		// managedFields cannot show what a read hides there either.
		f.whole = slices.Compact(slices.Sorted(slices.Values(append(wholeRecorded(entries, u, ""), unaccounted(entries, u, o.defaulted)...))))
		f.rv, f.writtenAt = u.GetResourceVersion(), LastWritten(u)
	}
}

// noOpDryRun sends u's no-op update, the one migrate sends (a JSON merge
// patch naming its uid and resourceVersion), through res as a server-side
// dry run, and returns the API server's answer.
func noOpDryRun(ctx context.Context, res dynamic.ResourceInterface, u *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": u.GetUID(), "resourceVersion": u.GetResourceVersion()}})
	return res.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
}

// LostPaths are the JSON paths of the fields of old (an object read at one
// version) that new (the same object at another version) lacks: map keys
// absent from new, list elements past the end of new's list, and values
// whose kind changed (a map or list that became something else). Values
// that changed within a kind are conversion, not loss; null values carry
// nothing. The top-level apiVersion and metadata (which no schema prunes)
// are not compared.
func LostPaths(old, new map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(old) {
		if k == "apiVersion" || k == "metadata" {
			continue
		}
		lostAt(&out, "."+k, old[k], new, k)
	}
	return out
}

func lostAt(out *[]string, path string, ov any, parent map[string]any, key string) {
	nv, ok := parent[key]
	if ov == nil {
		return
	}
	if !ok {
		*out = append(*out, path)
		return
	}
	lostIn(out, path, ov, nv)
}

func lostIn(out *[]string, path string, ov, nv any) {
	switch o := ov.(type) {
	case map[string]any:
		n, ok := nv.(map[string]any)
		if !ok {
			*out = append(*out, path)
			return
		}
		for _, k := range sortedKeys(o) {
			lostAt(out, path+pathKey(k), o[k], n, k)
		}
	case []any:
		n, ok := nv.([]any)
		if !ok {
			*out = append(*out, path)
			return
		}
		for i, e := range o {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case e == nil:
			case i >= len(n):
				*out = append(*out, p)
			default:
				lostIn(out, p, e, n[i])
			}
		}
	}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// pathKey is k as a step of a JSON path: .k, or ["k"] when k is not a
// plain name.
func pathKey(k string) string {
	if identifier.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// AsNewObject is u as a new object: same content, its own name and
// namespace (a rule on metadata.name judges the object's name, not one the
// check made up), no server-set metadata. Its dry-run create is answered
// AlreadyExists once everything else accepted it.
func AsNewObject(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	c.SetResourceVersion("")
	c.SetUID("")
	c.SetManagedFields(nil)
	c.SetCreationTimestamp(metav1.Time{})
	c.SetGeneration(0)
	c.SetOwnerReferences(nil)
	c.SetFinalizers(nil)
	c.SetDeletionTimestamp(nil)
	c.SetDeletionGracePeriodSeconds(nil)
	return c
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// notJudged reports whether err, an answer of the API server to a dry-run
// write, says nothing about the object: a conflict (it kept changing), a
// timeout, too many requests, or a server error (500, 503, 504). A
// conversion webhook that fails answers 500 too: the object cannot be
// measured either way.
func notJudged(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsUnexpectedServerError(err)
}

// apiMessage is the API server's message for err.
func apiMessage(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

// Describe is a one-line account of the objects that lose fields, the
// first limit of them named.
func (c *ObjectsCheck) Describe(limit int) string {
	parts := make([]string, len(c.Lost))
	for i, l := range c.Lost {
		parts[i] = l.String()
	}
	return lifecycle.Shorten(parts, limit, "; ", "; and %d more")
}
