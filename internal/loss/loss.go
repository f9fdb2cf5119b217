// Package loss answers "what will this rewrite lose?" for migrate,
// promote-storage and retire: every object is read at the versions it may be
// stored at and dry-run written through the storage version, and the API
// server's answer is compared with the read (Measure). It reaches the API
// server only through Checker, so its verdicts are tested with a fake.
package loss

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// ObjectChecker reads objects at two versions, sends each a server-side
// dry-run update through the second (or reads it there) and compares the
// answer with the read (see cluster.Client.CheckObjects): the API server
// answers, not a prediction.
type ObjectChecker interface {
	CheckObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error)
}

// Checker is an ObjectChecker that also lists the cluster's admission
// rules, for Measure's choice between reads and dry runs.
type Checker interface {
	ObjectChecker
	// AdmissionRules are the cluster's webhook and policy rules
	// (cluster.Client.AdmissionRules): whether anything acts on the
	// rewrite, which only a dry run then measures.
	AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error)
	// History reads the CRD as it was when an object was last written,
	// for data managedFields record only as a whole (B10).
	History
}

// Options are Measure's client options.
type Options struct {
	// PageSize, Concurrency and FieldManager are passed to each check
	// (cluster.CheckObjectsOptions).
	PageSize     int64
	Concurrency  int
	FieldManager string
	// Stored are versions to read the objects at as if
	// status.storedVersions listed them: a storedVersions trimmed by hand
	// claims what only a migration proves (retire passes the version it
	// removes). Only served versions in spec.versions are read.
	Stored []string
	// Accepted are JSON paths whose loss or change the user accepted
	// (migrate --allow-pruning=PATHS): a difference at one of them or
	// under it does not refuse, and is reported as accepted (Accepts).
	Accepted []string
	// WritesThrough is the version the run's writes go through when it is
	// not the storage version: the preferred version, through which the
	// storage version migrator of kube-controller-manager sends its no-op
	// patches (migrate --engine=server). "" for the storage version.
	WritesThrough string
	// Progress, when set, starts a progress display for the pass reading
	// the objects at version from.
	Progress func(from string) (update func(result.Progress), stop func())
	// CrossCheck makes every pass measured by reads measure again by dry
	// runs and fail with a *Disagreement where the two verdicts differ:
	// the proof, object by object, that the reads were enough (the tests
	// run every migration so).
	CrossCheck bool
}

// storedVersions are the versions objects of crd may be stored at:
// status.storedVersions, and of extra the served ones (an unserved one
// cannot be read; the claim that nothing is stored there stands until the
// run's pass).
func storedVersions(crd *apiextensionsv1.CustomResourceDefinition, extra []string) []string {
	stored := slices.Clone(crd.Status.StoredVersions)
	for _, name := range extra {
		if v := lifecycle.FindVersion(crd, name); v != nil && v.Served && !slices.Contains(stored, name) {
			stored = append(stored, name)
		}
	}
	return stored
}

// ChecksValidity reports whether Measure also sends each object as a new
// object at the storage version (a server-side dry-run create, which
// needs create on the resource): when a version objects may be stored at
// (status.storedVersions, and extra as Options.Stored) has another
// schema than the storage version, or conversion is a webhook — an
// object valid where it is stored may be invalid there.
func ChecksValidity(crd *apiextensionsv1.CustomResourceDefinition, extra []string) bool {
	storage := lifecycle.StorageVersion(crd)
	sv := lifecycle.FindVersion(crd, storage)
	if sv == nil {
		return false
	}
	for _, old := range storedVersions(crd, extra) {
		if v := lifecycle.FindVersion(crd, old); old != storage && (lifecycle.UsesWebhook(crd) || v == nil || !schema.Equal(schema.Of(v), schema.Of(sv))) {
			return true
		}
	}
	return false
}

// Measure asks the API server what migrating crd would lose,
// on the path migrate's writes take: every object is read at a version it
// may be stored at and sent migrate's own no-op update through the storage
// version S as a server-side dry run, and the two are compared field by
// field (cluster.Client.CheckObjects, without the dry-run create). The
// objects are read at each served version of status.storedVersions other
// than S — whatever their schemas: conversion, pruning, defaulting and
// UPDATE admission (mutating webhooks and policies) all answer — and, when
// none is, at S itself (admission may change even an object stored at S).
// A field present at the read and absent from what S would store refuses
// the migration, naming the objects and paths, nothing changed. When a
// stored version differs from S (its schema, or Webhook conversion), each
// object is also sent a dry-run create at S under its own name: the
// objects S's schema refuses as new are named in a warning (the rewrite
// keeps their data; typed clients of S may not decode them). The dry runs
// take the path of the run's writes (Options.WritesThrough).
//
// A stored version that is not served cannot be read. Under conversion
// strategy None nothing is lost unseen there: the read at S gives what the
// rewrite keeps up to S's pruning, which the static check of
// action's migrationRefusal compares with the old schema. Under Webhook conversion
// the webhook's conversion of those objects to S cannot be compared with
// anything, so the migration is refused as unknown (serve the version for
// the measurement, or pass --allow-pruning) — unless the CRD has no object
// at all. A version whose objects cannot be listed is returned as a
// warning: the migration's own reads fail on them too, and it then trims
// nothing.
func Measure(ctx context.Context, c Checker, crd *apiextensionsv1.CustomResourceDefinition, o Options) (*Measurement, error) {
	out := &Measurement{}
	storage := lifecycle.StorageVersion(crd)
	sv := lifecycle.FindVersion(crd, storage)
	switch {
	case sv == nil:
		return out, nil
	case !sv.Served:
		// The writes go through the storage version: the migration
		// refuses the same way, and nothing can be measured.
		run := lifecycle.Crdversion("serve", crd.Name, storage)
		return nil, &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Err: result.ErrStorageNotServed, Run: &run,
			Reason: storage + " is the storage version but not served"}
	}
	webhook := lifecycle.UsesWebhook(crd)
	var refusals, unknown []string
	// The schemas' prediction (conversion None): the fields each stored
	// version's schema and the storage version's prune of each other.
	// Data that no read shows is looked for in the objects' managedFields,
	// whatever the schemas declare (B15): a field they record that neither
	// the read nor the answer holds, and that the schema of the version
	// read at does not keep, may be in etcd, pruned on every read — a
	// schema that no longer declares it — and the rewrite would erase it.
	// One that schema keeps is not in etcd: a read there would show it (it
	// was recorded as written through a version that declares it and
	// pruned as it was stored at one that does not: prunedOnRead).
	predicted := lifecycle.MigrationLosses(crd)
	// Whether an object valid at the version it is stored at is valid at
	// the storage version depends on the schemas and, under a webhook, on
	// its conversion: then each object is also sent a dry-run create at
	// the storage version under its own name (no ratcheting), whoever
	// switched the storage version.
	// The versions objects may be stored at: status.storedVersions, and
	// o.Stored where served (an unserved one cannot be read; the claim
	// that nothing is stored there stands until the run's pass).
	stored := storedVersions(crd, o.Stored)
	validity := ChecksValidity(crd, o.Stored)
	// The path of the run's writes, when it is not the storage version's
	// (the server engine's controller): under None it prunes with the
	// schema of the version it goes through, and the dry run takes it;
	// under a webhook, the conversion from the version read at to it
	// cannot be compared with the read unless it is that version (or the
	// storage version, whose conversion the round trip takes).
	writes := storage
	if o.WritesThrough != "" {
		writes = o.WritesThrough
	}
	dryRunBecause := ""
	if !webhook && writes == storage {
		dryRunBecause = writeActors(ctx, c, crd, sv, stored)
	}
	// Under a webhook the dry runs go through each stored version (the
	// round trip), while the run writes through the storage version:
	// admission that matches only requests of the storage version (a
	// policy with matchPolicy Exact, a transition rule of its schema) acts
	// on the run's writes and not on those dry runs. The objects are then
	// also read at the storage version and dry-run written through it, and
	// the two compared whole.
	storagePass := webhook && writes == storage && writeActors(ctx, c, crd, sv, stored) != ""
	hidden := map[string][]string{}
	hiddenWhole := map[string][]string{} // inside atomic lists and maps
	wholeUnknown := 0                    // lines of unmeasured about them
	history := &crdHistory{h: c, name: crd.Name}
	unrecorded := map[string]string{} // object -> the version read at
	objects := refusedObjects{}
	seenAll := true
	var refused, unmeasured []string
	var acceptedAll []cluster.ObjectLoss // what o.Accepted accepted, every pass
	measure := func(from string) error {
		// Under a conversion webhook the update goes through from: its
		// answer is what the storage version keeps of the object,
		// converted back to from (a lossless renaming webhook gives the
		// object back). Under None, conversion changes apiVersion alone,
		// and the update takes migrate's own path, through the storage
		// version, with its defaults and admission.
		through := writes
		because := dryRunBecause
		if webhook {
			because = "Webhook conversion: what the webhook gives back of an object stored through " + storage + " answers only to a write"
			switch {
			case writes == storage && from != storage:
				through = from
			case writes != storage && writes != from:
				seenAll = false
				unmeasured = append(unmeasured, fmt.Sprintf("the objects read at %s: the run writes them through %s (the version kube-controller-manager's storage version migrator patches through, discovery's preferred version), and what the conversion webhook gives %s of them cannot be compared with the read at %s", from, writes, writes, from))
				return nil
			}
		}
		co := cluster.CheckObjectsOptions{From: from, To: storage, Through: through, Whole: true, PageSize: o.PageSize,
			Concurrency: o.Concurrency, FieldManager: o.FieldManager, UpdateOnly: !validity, Recorded: []string{".**"}}
		if webhook {
			// The answer is at from: the entries written through from
			// name its fields as it does.
			co.RecordedThrough = lifecycle.GroupVersion(crd, from)
		} else if writes != storage {
			because = "the run writes through " + writes + ", not the storage version: what its schema prunes before " + storage + "'s answers only to a write"
		}
		co.Reads = because == ""
		if o.Progress != nil {
			update, stop := o.Progress(from)
			defer stop()
			co.Progress = func(done, total int64) { update(result.Progress{Done: done, Total: total}) }
		}
		found, err := c.CheckObjects(ctx, crd, co)
		if err != nil {
			return err
		}
		if co.Reads && o.CrossCheck {
			co.Reads, co.Progress = false, nil
			dry, err := c.CheckObjects(ctx, crd, co)
			if err != nil {
				return err
			}
			if d := disagree(found, dry); len(d) > 0 {
				return &Disagreement{CRD: crd.Name, From: from, To: storage, Objects: d}
			}
			co.Reads = true
		}
		if found.ListError != "" {
			seenAll = false
			unmeasured = append(unmeasured, fmt.Sprintf("the objects cannot be listed at %s: %s", from, found.ListError))
			return nil
		}
		if problems := append(slices.Clone(found.Unreadable), found.Forbidden...); len(problems) > 0 {
			seenAll = false
			unmeasured = append(unmeasured, fmt.Sprintf("%d object(s) could not be read or dry-run written through %s: %s", len(problems), through, describeProblems(problems, 3)))
			objects.problems(from, problems, func(o *result.RefusedObject, m string) { o.Unmeasured = m })
		}
		objects.problems(from, found.Problems, func(o *result.RefusedObject, m string) { o.Refused = m })
		if len(found.Problems) > 0 {
			refused = append(refused, fmt.Sprintf("%d object(s) read at %s that the API server refuses to write through %s: %s", len(found.Problems), from, through, describeProblems(found.Problems, 10)))
		}
		found.RecordedMissing = prunedOnRead(found.RecordedMissing, lifecycle.FindVersion(crd, from))
		var accepted []cluster.ObjectLoss
		found.Lost, accepted = Accept(found.Lost, o.Accepted, accepted)
		found.Changed, accepted = Accept(found.Changed, o.Accepted, accepted)
		found.RecordedMissing, accepted = Accept(found.RecordedMissing, o.Accepted, accepted)
		whole, err := judgeWhole(ctx, history, crd, stored, found.WholeRecorded)
		if err != nil {
			return err
		}
		whole.Hidden, accepted = Accept(whole.Hidden, o.Accepted, accepted)
		var acceptedUnknown []cluster.ObjectLoss
		whole.Unknown, acceptedUnknown = Accept(whole.Unknown, o.Accepted, nil)
		acceptedAll = append(append(acceptedAll, accepted...), acceptedUnknown...)
		if len(acceptedUnknown) > 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("accepted (--allow-pruning=%s), not measured: whatever a narrowed schema hides inside these lists or maps is lost for good, if anything is: %s",
				strings.Join(o.Accepted, ","), describeLosses(acceptedUnknown, 10)))
		}
		for _, l := range whole.Hidden {
			hiddenWhole[l.Object] = append(hiddenWhole[l.Object], l.Paths...)
		}
		objects.paths(from, whole.Hidden, func(o *result.RefusedObject, p []string) { o.Hidden = append(o.Hidden, p...) })
		if len(whole.Unknown) > 0 {
			seenAll = false
			wholeUnknown++
			unmeasured = append(unmeasured, fmt.Sprintf("%d object(s) read at %s hold data inside lists or maps that their managedFields record only as a whole (atomic), where a schema narrowed after their last write would hide fields from every read: %s; if no schema of the versions they may be stored at was ever wider there, accept what may be hidden with %s",
				len(whole.Unknown), from, wholeUnknownText(whole, 10), AcceptFlag(whole.Unknown)))
			for _, l := range whole.Unknown {
				objects.at(from, l.Object).Unmeasured = whole.Why[l.Object] + " (data recorded only as a whole at " + strings.Join(l.Paths, ", ") + ")"
			}
		}
		if len(accepted) > 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("accepted (--allow-pruning=%s): the rewrite loses or changes, for good, %s",
				strings.Join(o.Accepted, ","), describeLosses(accepted, 10)))
		}
		for _, l := range found.RecordedMissing {
			hidden[l.Object] = append(hidden[l.Object], l.Paths...)
		}
		objects.paths(from, found.Lost, func(o *result.RefusedObject, p []string) { o.Dropped = append(o.Dropped, p...) })
		objects.paths(from, found.Changed, func(o *result.RefusedObject, p []string) { o.Changed = append(o.Changed, p...) })
		objects.paths(from, found.RecordedMissing, func(o *result.RefusedObject, p []string) { o.Hidden = append(o.Hidden, p...) })
		for _, name := range found.Unrecorded {
			unrecorded[name] = from
		}
		if len(found.InvalidAsNew) > 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%d object(s) read at %s are invalid at %s as new objects (a server-side dry-run create under their own names: the whole schema and its rules, without ratcheting): %s; the rewrite stores them as they are, and typed clients of %s may fail to decode them: fix them",
				len(found.InvalidAsNew), from, storage, describeProblems(found.InvalidAsNew, 10), storage))
		}
		pass := result.Measurement{From: from, Through: through, Design: result.DesignDryRun, DryRunBecause: because, DryRuns: found.Validated,
			Objects: found.Listed, Lost: len(found.Lost), Changed: len(found.Changed),
			Set: countPaths(found.Set), NullsDropped: countPaths(found.NullsDropped), GenerationChanged: len(found.GenerationChanged),
			InvalidAtStorage: len(found.InvalidAsNew), Accepted: countPaths(accepted), ElapsedSeconds: found.ElapsedSeconds}
		if co.Reads {
			pass.Design = result.DesignReads
		}
		out.Passes = append(out.Passes, pass)
		if len(found.Lost) > 0 {
			dropper := storage
			if through != storage && !webhook {
				dropper = "the write through " + through
			}
			refusals = append(refusals, fmt.Sprintf("%d object(s) have fields at %s that %s drops: %s", len(found.Lost), from, dropper, found.Describe(10)))
		}
		if len(found.Changed) > 0 {
			refusals = append(refusals, fmt.Sprintf("%d object(s) have values at %s that the rewrite at %s changes: %s", len(found.Changed), from, storage, describeLosses(found.Changed, 10)))
		}
		return nil
	}
	measured := false
	for _, old := range stored {
		v := lifecycle.FindVersion(crd, old)
		switch {
		case old == storage:
			continue
		case v == nil:
			out.Warnings = append(out.Warnings, fmt.Sprintf("objects stored at %s cannot be read: %s is not in spec.versions (restore it, unserved, first)", old, old))
			continue
		case !v.Served && webhook:
			unknown = append(unknown, old)
			continue
		case !v.Served:
			continue
		}
		if err := measure(old); err != nil {
			return nil, err
		}
		measured = true
	}
	if !measured || storagePass {
		if err := measure(storage); err != nil {
			return nil, err
		}
	}
	// A refusal's way out repeats what was accepted, less the paths that
	// accept nothing (a misspelt path is not advice), and says so.
	kept, idleText := o.Accepted, ""
	if idle := Unmatched(o.Accepted, acceptedAll); len(idle) > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("--allow-pruning path(s) %s match nothing the rewrite loses or changes: they accept nothing (a misspelt path?)", strings.Join(idle, ", ")))
		kept = slices.DeleteFunc(slices.Clone(o.Accepted), func(p string) bool { return slices.Contains(idle, p) })
		idleText = fmt.Sprintf("; --allow-pruning path(s) %s matched nothing and are left out", strings.Join(idle, ", "))
	}
	if len(refused) > 0 {
		return nil, objects.refusal(&lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Reason: "the API server refuses to rewrite some objects at " + storage,
			WayOut:       "fix those objects (or the rule that refuses them) first: the run would write the others and leave a mix",
			DetailsTitle: "Each object sent migrate's update as a server-side dry run", Details: refused})
	}
	if len(unmeasured) > 0 {
		wayOut := "make them readable (the conversion webhook, your permissions) and run again (an answer marked not judged needs only a re-run), or pass --allow-pruning to accept what cannot be measured"
		if len(unmeasured) == wholeUnknown {
			// A re-run cannot bring back a compacted history.
			wayOut = "accept what may be hidden with the --allow-pruning the details name, if no release ever declared more inside those lists or maps than today's schema (kubectl crdversion diff between the releases shows it); or, where the history could not be read for a permission, grant list on customresourcedefinitions and run again"
		}
		return nil, objects.refusal(&lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Reason: "what the migration loses is unknown for objects that could not be measured",
			WayOut:       wayOut,
			DetailsTitle: "Not measured", Details: unmeasured})
	}
	if len(refusals) == 0 && (len(hidden) > 0 || len(hiddenWhole) > 0) {
		var details []string
		if len(hidden) > 0 {
			details = append(details, hiddenText(storage, predicted, hidden))
		}
		if len(hiddenWhole) > 0 {
			details = append(details, hiddenWholeText(storage, hiddenWhole))
		}
		return nil, objects.refusal(&lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Reason: "rewriting the objects at " + storage + " loses data that no read shows",
			WayOut: "keep the fields as the details say, or accept losing exactly these with " + objects.acceptFlag(kept) + idleText, Details: details})
	}
	if len(refusals) > 0 {
		return nil, objects.refusal(&lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Reason: "rewriting the objects at " + storage + " loses data",
			WayOut:       "make " + storage + "'s schema keep these fields (or the admission or conversion that changes them spare them), or accept exactly these losses with " + objects.acceptFlag(kept) + " (every other loss still refuses)" + idleText,
			DetailsTitle: "Each object read and dry-run written, compared as a whole", Details: refusals})
	}
	// Every pass lists every object, whatever version it is stored at:
	// with none, nothing is stored at the unserved versions either.
	if len(out.Passes) > 0 && out.Passes[0].Objects == 0 {
		unknown = nil
	}
	switch {
	case len(predicted) == 0:
	case seenAll && len(unrecorded) == 0 && len(out.Passes) > 0:
		// Every object read, none holds or records a field the schemas
		// predict lost: the prediction is about data that is not there.
		out.PredictionCleared = true
	case len(unrecorded) > 0:
		names := slices.Sorted(maps.Keys(unrecorded))
		out.UnrecordedText = fmt.Sprintf("%d object(s) have no managedFields, so what they were written with is not known: %s", len(names), lifecycle.Shorten(names, 10, ", ", ", … %d more"))
		for _, n := range names {
			out.Unrecorded = append(out.Unrecorded, result.RefusedObject{Object: n, Version: unrecorded[n],
				Unmeasured: "no managedFields: what it was written with is not known, so the fields the schemas predict lost may be in etcd unseen"})
		}
	}
	if len(unknown) > 0 {
		cmds := make([]lifecycle.Command, 0, len(unknown)+1)
		for _, v := range unknown {
			cmds = append(cmds, lifecycle.Crdversion("serve", crd.Name, v))
		}
		cmds = append(cmds, lifecycle.Crdversion("migrate", crd.Name))
		return nil, &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name,
			Reason:  "what the migration loses is unknown for objects stored at " + strings.Join(unknown, ", "),
			WayOut:  "serve them for the measurement (" + lifecycle.RenderAll(cmds, nil) + "), or pass --allow-pruning to accept what cannot be measured",
			Details: []string{fmt.Sprintf("%s not served, so those objects cannot be read there and compared with what the conversion webhook gives %s", strings.Join(unknown, ", "), storage)}}
	}
	return out, nil
}

// Measurement is what Measure measured.
type Measurement struct {
	// Passes are the passes over the objects, one per version read at.
	Passes []result.Measurement
	// Warnings say what could not be measured.
	Warnings []string
	// PredictionCleared is true when the losses the schemas predict
	// (conversion None, lifecycle.MigrationLosses) were looked for on every
	// object and none holds or records a field there: every object was
	// read, and each has managedFields, none of which names such a field
	// that the object lacks.
	PredictionCleared bool
	// UnrecordedText names the objects without managedFields, which keep
	// the prediction standing; Unrecorded are all of them, for a refusal
	// (NewRefusal).
	UnrecordedText string
	Unrecorded     []result.RefusedObject
}

// NewRefusal is e with the objects behind it, for the report of a refused
// migration (a Refusal).
func NewRefusal(e *lifecycle.RefusalError, objects []result.RefusedObject) *Refusal {
	return &Refusal{RefusalError: e, Objects: objects}
}

// prunedOnRead is what of missing (fields managedFields record that
// neither the read at v nor the answer holds) v's schema does not keep
// (schema.Keeps): only there can a read hide data in etcd. The rest was
// pruned as it was written and is not stored.
func prunedOnRead(missing []cluster.ObjectLoss, v *apiextensionsv1.CustomResourceDefinitionVersion) []cluster.ObjectLoss {
	if v == nil {
		return missing
	}
	s := schema.Of(v)
	var out []cluster.ObjectLoss
	for _, l := range missing {
		paths := slices.DeleteFunc(slices.Clone(l.Paths), func(p string) bool { return schema.Keeps(s, p) })
		if len(paths) > 0 {
			out = append(out, cluster.ObjectLoss{Object: l.Object, Paths: paths})
		}
	}
	return out
}

// Accept splits ls into the paths accepted does not hold (schema.Under;
// objects with none left are dropped) and those it holds, appended to
// into.
func Accept(ls []cluster.ObjectLoss, accepted []string, into []cluster.ObjectLoss) (rest, _ []cluster.ObjectLoss) {
	if len(accepted) == 0 {
		return ls, into
	}
	for _, l := range ls {
		var keep, took []string
		for _, p := range l.Paths {
			if schema.Under(accepted, p) {
				took = append(took, p)
			} else {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			rest = append(rest, cluster.ObjectLoss{Object: l.Object, Paths: keep})
		}
		if len(took) > 0 {
			into = append(into, cluster.ObjectLoss{Object: l.Object, Paths: took})
		}
	}
	return rest, into
}

// Unmatched is the paths of accepted that no path of took lies under
// (schema.Under): acceptances that accepted nothing, in order.
func Unmatched(accepted []string, took []cluster.ObjectLoss) []string {
	var out []string
	for _, a := range accepted {
		if !slices.ContainsFunc(took, func(l cluster.ObjectLoss) bool {
			return slices.ContainsFunc(l.Paths, func(p string) bool { return schema.Under([]string{a}, p) })
		}) {
			out = append(out, a)
		}
	}
	return out
}

// AcceptFlag is the --allow-pruning that accepts the paths of ls and
// nothing else: "--allow-pruning=" and every path once, sorted, joined by
// commas, each list index written "[*]" (the schema's notation, which the
// schemas' prediction of conversion None also takes, so that one flag
// passes both), quoted for a POSIX shell when it holds brackets or quotes;
// "" when ls has none. A refusal names it as its way out, so that
// accepting a loss never turns the measurement off.
func AcceptFlag(ls ...[]cluster.ObjectLoss) string {
	seen := map[string]bool{}
	for _, l := range ls {
		for _, o := range l {
			for _, p := range o.Paths {
				seen[listIndex.ReplaceAllString(p, "[*]")] = true
			}
		}
	}
	if len(seen) == 0 {
		return ""
	}
	return lifecycle.Quote("--allow-pruning=" + strings.Join(slices.Sorted(maps.Keys(seen)), ","))
}

// listIndex is a list index of a concrete path (".spec.ports[2]").
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// describeProblems names the first limit answers of the API server with
// their objects (cluster.ProblemLines).
func describeProblems(ps []cluster.ObjectProblem, limit int) string {
	return lifecycle.Shorten(cluster.ProblemLines(ps), limit, "; ", "; and %d more")
}

// describeLosses names the first limit objects with their paths.
func describeLosses(ls []cluster.ObjectLoss, limit int) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return lifecycle.Shorten(parts, limit, "; ", "; and %d more")
}

// countPaths counts, for each path, the objects it was found in; sorted by
// path.
func countPaths(ls []cluster.ObjectLoss) []result.PathCount {
	counts := map[string]int{}
	for _, l := range ls {
		for _, p := range l.Paths {
			counts[p]++
		}
	}
	out := make([]result.PathCount, 0, len(counts))
	for _, p := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, result.PathCount{Path: p, Objects: counts[p]})
	}
	return out
}

// hiddenText says which objects hold data that no read shows: their
// managedFields record fields that the schemas predict lost and that the
// write's answer lacks.
func hiddenText(storage string, predicted []lifecycle.Loss, hidden map[string][]string) string {
	found := &cluster.ObjectsCheck{}
	for _, n := range slices.Sorted(maps.Keys(hidden)) {
		found.Lost = append(found.Lost, cluster.ObjectLoss{Object: n, Paths: slices.Compact(slices.Sorted(slices.Values(hidden[n])))})
	}
	if len(predicted) == 0 {
		return fmt.Sprintf("%d object(s) hold fields that their managedFields record and that neither the read nor %s's answer shows: %s; no schema of the CRD declares them now, so every read prunes them while etcd keeps them, and the rewrite erases them for good; declare them again in the schema of the version they are stored at to keep them, or accept losing them with --allow-pruning=PATHS",
			len(found.Lost), storage, found.Describe(10))
	}
	var why, stored []string
	anyField := true
	for _, l := range predicted {
		why = append(why, l.Describe(storage))
		stored = append(stored, l.Version)
		anyField = anyField && l.AnyField
	}
	if anyField {
		// The version they are stored at keeps every field already (a
		// restored version): only the storage version can keep them.
		return fmt.Sprintf("%d object(s) hold fields that their managedFields record and that neither the read nor %s's answer shows: %s (%s); to keep them, add them to %s's schema (or use Webhook conversion) first, or accept losing them with --allow-pruning=PATHS",
			len(found.Lost), storage, found.Describe(10), strings.Join(why, "; "), storage)
	}
	return fmt.Sprintf("%d object(s) hold fields that their managedFields record and that neither the read nor %s's answer shows: %s (%s); declare the fields again in the schema of %s, the version they are stored at, so that reads show them and the measurement compares them (a field pruned as it was written stays absent, and nothing is lost)",
		len(found.Lost), storage, found.Describe(10), strings.Join(why, "; "), strings.Join(stored, " or "))
}

// hiddenWholeText says which objects hold, inside data their
// managedFields record only as a whole, fields the schema of the version
// they are stored at kept when they were last written and prunes now.
func hiddenWholeText(storage string, hidden map[string][]string) string {
	found := &cluster.ObjectsCheck{}
	for _, n := range slices.Sorted(maps.Keys(hidden)) {
		found.Lost = append(found.Lost, cluster.ObjectLoss{Object: n, Paths: slices.Compact(slices.Sorted(slices.Values(hidden[n])))})
	}
	return fmt.Sprintf("%d object(s) hold lists or maps that their managedFields record only as a whole (atomic), written while the schema of the version they are stored at declared more inside them than it does now (the CRD as it was at their last write, read from the API server): %s may be in etcd, hidden from every read, and rewriting them at %s erases whatever is there for good; declare the fields again in that version's schema (reads then show them, and the measurement compares them), or accept losing them",
		len(found.Lost), found.Describe(10), storage)
}

// Refusal is Measure's refusal with every object behind it (a
// *lifecycle.RefusalError names the first ten): errors.As finds both.
type Refusal struct {
	*lifecycle.RefusalError
	Objects []result.RefusedObject
}

// Unwrap returns the refusal.
func (r *Refusal) Unwrap() error { return r.RefusalError }

// Report is the refusal as a migration report states it.
func (r *Refusal) Report() *result.Refusal {
	return &result.Refusal{Reason: r.Reason, WayOut: r.WayOut, Details: slices.Clone(r.Details), Objects: slices.Clone(r.Objects)}
}

// refusedObjects collects, by version read at and object, what each pass
// found, for a Refusal.
type refusedObjects map[[2]string]*result.RefusedObject

func (m refusedObjects) at(version, object string) *result.RefusedObject {
	k := [2]string{version, object}
	if m[k] == nil {
		m[k] = &result.RefusedObject{Object: object, Version: version}
	}
	return m[k]
}

func (m refusedObjects) paths(version string, ls []cluster.ObjectLoss, set func(*result.RefusedObject, []string)) {
	for _, l := range ls {
		set(m.at(version, l.Object), l.Paths)
	}
}

func (m refusedObjects) problems(version string, ps []cluster.ObjectProblem, set func(*result.RefusedObject, string)) {
	for _, p := range ps {
		set(m.at(version, p.Object), p.Message)
	}
}

// acceptFlag is the --allow-pruning that accepts every path collected
// (dropped, changed or hidden) and those already accepted, nothing else.
func (m refusedObjects) acceptFlag(accepted []string) string {
	ls := []cluster.ObjectLoss{{Paths: accepted}}
	for _, o := range m {
		ls = append(ls, cluster.ObjectLoss{Object: o.Object, Paths: slices.Concat(o.Dropped, o.Changed, o.Hidden)})
	}
	return AcceptFlag(ls)
}

// refusal is e with every object collected, sorted by version and object.
func (m refusedObjects) refusal(e *lifecycle.RefusalError) error {
	out := &Refusal{RefusalError: e}
	for _, k := range slices.SortedFunc(maps.Keys(m), func(a, b [2]string) int { return cmp.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) }) {
		out.Objects = append(out.Objects, *m[k])
	}
	return out
}
