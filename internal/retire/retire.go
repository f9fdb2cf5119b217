// Package retire plans the removal of an old version from a CRD: the
// ordered workflow of the Kubernetes task page "Versions in
// CustomResourceDefinitions" (upgrade existing objects, then remove the old
// version), with a preflight at every step. Plan is pure: it evaluates each
// step from the CRD and the facts the caller measured, and the caller
// (kubectl crdversion retire) takes the first step that is to do, then
// plans again from the new live state. Every step is idempotent.
package retire

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// StepID names a step of the workflow, in order.
type StepID string

const (
	// ClientsMoved: no client requests OLD (from the API server's metrics).
	ClientsMoved StepID = "ClientsMoved"
	// Unserved: OLD has served: false.
	Unserved StepID = "Unserved"
	// StorageMoved: another version is the storage version.
	StorageMoved StepID = "StorageMoved"
	// Migrated: every object was rewritten and storedVersions no longer lists OLD.
	Migrated StepID = "Migrated"
	// ManagedFieldsClean: no object's managedFields names OLD.
	ManagedFieldsClean StepID = "ManagedFieldsClean"
	// Removed: OLD is no longer in spec.versions.
	Removed StepID = "Removed"
	// Conversion: what the conversion webhook and strategy can drop now.
	Conversion StepID = "Conversion"
)

// Status of a step.
type Status string

const (
	// Done: the step's condition holds already.
	Done Status = "done"
	// ToDo: retire can take the step (or measure what it needs).
	ToDo Status = "to do"
	// Blocked: the step cannot be taken; Command says what unblocks it.
	Blocked Status = "blocked"
	// Skipped: the check was skipped by a flag, which the output records.
	Skipped Status = "skipped"
	// Info: a reminder, nothing to do for retire.
	Info Status = "info"
)

// Step is one step of the plan.
type Step struct {
	Number int    `json:"number"`
	ID     StepID `json:"id"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Message says why the step has its status, or what taking it does.
	Message string `json:"message"`
	// Command unblocks a blocked step, or is what an info step suggests.
	Command string `json:"command,omitempty"`
	// Evidence are the observations behind the status (client usage).
	Evidence []string `json:"evidence,omitempty"`
}

// Facts are what the caller measured on the cluster. Nil pointers mean
// not measured yet: the step that needs them is then to do ("measure").
type Facts struct {
	// Usage is the client-usage report of OLD, UsageError why it could not
	// be measured (metrics forbidden or absent).
	Usage      *usage.Report
	UsageError string
	// SkipUsage records --skip-usage-check.
	SkipUsage bool
	// StaleManagedFields lists the objects whose managedFields name OLD.
	StaleManagedFields *[]string
	// Migrate (--migrate) lets retire run the migration;
	// CleanManagedFields (--clean-managed-fields) lets it rewrite
	// managedFields entries.
	Migrate, CleanManagedFields bool
}

// Plan evaluates the steps of retiring old from crd, in order. A step that
// is to do is assumed taken when the later steps are evaluated, so a plan
// with no blocked step runs to the end; after the first blocked step the
// later steps say what they would do, but retire stops there.
func Plan(crd *apiextensionsv1.CustomResourceDefinition, old string, f Facts) []Step {
	sim := crd.DeepCopy()
	name := crd.Name
	cmd := func(format string, args ...any) string { return "kubectl crdversion " + fmt.Sprintf(format, args...) }
	retireCmd := func(flag string) string { return strings.TrimSpace(cmd("retire %s %s %s", name, old, flag)) }
	steps := []Step{
		{ID: ClientsMoved, Title: "clients moved off " + old},
		{ID: Unserved, Title: old + " unserved"},
		{ID: StorageMoved, Title: "another version is the storage version"},
		{ID: Migrated, Title: "objects migrated, storedVersions without " + old},
		{ID: ManagedFieldsClean, Title: "no managedFields entry names " + old},
		{ID: Removed, Title: old + " removed from spec.versions"},
		{ID: Conversion, Title: "conversion"},
	}
	for i := range steps {
		steps[i].Number = i + 1
	}
	set := func(id StepID, st Status, cmdline string, format string, args ...any) *Step {
		s := &steps[slices.IndexFunc(steps, func(s Step) bool { return s.ID == id })]
		s.Status, s.Command, s.Message = st, cmdline, fmt.Sprintf(format, args...)
		return s
	}
	v := lifecycle.FindVersion(sim, old)
	inSpec := v != nil
	storage := lifecycle.StorageVersion(sim)
	successor := successorOf(sim, old)

	// 1. Clients.
	switch {
	case !inSpec:
		set(ClientsMoved, Done, "", "%s is not in spec.versions", old)
	case !v.Served:
		set(ClientsMoved, Done, "", "%s is not served, so no client can use it", old)
	case f.SkipUsage:
		set(ClientsMoved, Skipped, "", "client usage of %s was NOT checked (--skip-usage-check)", old)
	case f.UsageError != "":
		set(ClientsMoved, Blocked, retireCmd("--skip-usage-check"),
			"whether clients still use %s is unknown: %s; grant get on the non-resource URL /metrics, or, once you know by other means that no client uses %s, skip the check", old, f.UsageError, old)
	case f.Usage == nil:
		set(ClientsMoved, ToDo, "", "measure requests to %s from the API server's metrics", old)
	case f.Usage.Verdict == usage.InUse:
		s := set(ClientsMoved, Blocked, retireCmd(""), "clients still use %s: move them (and the controller) to %s, then re-run", old, orPlaceholder(successor))
		s.Evidence = f.Usage.Evidence()
	case f.Usage.Verdict == usage.Unknown:
		s := set(ClientsMoved, Blocked, retireCmd(""), "whether clients still use %s is unknown: %s; re-run", old, f.Usage.Reason)
		s.Evidence = f.Usage.Evidence()
	default:
		s := set(ClientsMoved, Done, "", "no client request to %s seen", old)
		s.Evidence = f.Usage.Evidence()
	}

	// 2. Unserve, and 3. the storage version.
	switch {
	case !inSpec || !v.Served:
		set(Unserved, Done, "", "%s is not served", old)
	case v.Storage:
		set(Unserved, Blocked, cmd("promote-storage %s %s", name, orPlaceholder(successor)), "%s is the storage version and must stay served until another version is", old)
	default:
		r := edit.SetServed(sim, old, false)
		if failed := r.Checks.Failed(); len(failed) > 0 {
			set(Unserved, Blocked, firstCommand(failed, cmd("serve %s %s", name, orPlaceholder(successor))), "%s", failed[0].Message)
		} else {
			set(Unserved, ToDo, "", "set served: false on %s", old)
			sim = r.Edited
			v = lifecycle.FindVersion(sim, old)
		}
	}
	switch {
	case inSpec && v.Storage:
		set(StorageMoved, Blocked, cmd("promote-storage %s %s", name, orPlaceholder(successor)), "%s is the storage version", old)
	case storage == "":
		set(StorageMoved, Blocked, "", "spec.versions has no storage version")
	default:
		set(StorageMoved, Done, "", "the storage version is %s", storage)
	}

	// 4. Migration.
	stored := slices.Contains(sim.Status.StoredVersions, old)
	switch {
	case !stored:
		set(Migrated, Done, "", "status.storedVersions is [%s]", strings.Join(sim.Status.StoredVersions, ", "))
	case !inSpec:
		set(Migrated, Blocked, cmd("add-version %s %s --from %s --served=false", name, old, storage),
			"status.storedVersions lists %s but spec.versions does not: objects stored at it are unreadable until it is restored (unserved); then kubectl crdversion migrate %s", old, name)
	case v.Storage:
		set(Migrated, Blocked, "", "waits for step 3: objects can move off %s only once another version is the storage version", old)
	case f.Migrate:
		set(Migrated, ToDo, "", "rewrite every object at %s, then trim status.storedVersions [%s] to [%s] (migrate)", storage, strings.Join(sim.Status.StoredVersions, ", "), storage)
		sim.Status.StoredVersions = slices.DeleteFunc(slices.Clone(sim.Status.StoredVersions), func(s string) bool { return s == old })
	default:
		set(Migrated, Blocked, retireCmd("--migrate"), "status.storedVersions [%s] lists %s: objects may still be stored at it; migrate them (kubectl crdversion migrate %s, or retire with --migrate)",
			strings.Join(sim.Status.StoredVersions, ", "), old, name)
	}

	// 5. managedFields.
	switch {
	case !inSpec:
		set(ManagedFieldsClean, Done, "", "%s is not in spec.versions", old)
	case f.StaleManagedFields == nil:
		set(ManagedFieldsClean, ToDo, "", "look for objects whose managedFields name %s/%s", crd.Spec.Group, old)
	case len(*f.StaleManagedFields) == 0:
		set(ManagedFieldsClean, Done, "", "no object's managedFields names %s/%s", crd.Spec.Group, old)
	case f.CleanManagedFields && !v.Storage:
		set(ManagedFieldsClean, ToDo, "", "rewrite the managedFields entries of %d object(s) from %s to %s", len(*f.StaleManagedFields), old, storage)
	default:
		s := set(ManagedFieldsClean, Blocked, retireCmd("--clean-managed-fields"),
			"%d object(s) have managedFields entries naming %s/%s (%s): once %s is removed, server-side apply on them fails with \"request to convert CR to an invalid group/version\" (kubernetes/kubernetes#111937); rewrite the entries first",
			len(*f.StaleManagedFields), crd.Spec.Group, old, sample(*f.StaleManagedFields), old)
		if v.Storage {
			s.Command, s.Message = "", s.Message+", once another version is the storage version"
		}
	}

	// 6. Removal, evaluated on the state the steps before leave.
	if !inSpec {
		set(Removed, Done, "", "%s is not in spec.versions", old)
	} else {
		r := edit.RemoveVersion(sim, old)
		failed := r.Checks.Failed()
		earlier := -1
		for i := range 5 {
			if steps[i].Status == Blocked {
				earlier = i
				break
			}
		}
		switch {
		case len(failed) > 0:
			var msgs []string
			for _, c := range failed {
				msgs = append(msgs, c.Message)
			}
			set(Removed, Blocked, "", "%s", strings.Join(msgs, "; "))
		case earlier >= 0:
			set(Removed, Blocked, "", "waits for step %d", earlier+1)
		default:
			set(Removed, ToDo, "", "remove %s from spec.versions (the write carries the CRD's resourceVersion as checked)", old)
			sim = r.Edited
		}
	}

	// 7. Conversion.
	left := len(sim.Spec.Versions)
	if lifecycle.FindVersion(sim, old) != nil {
		left-- // once removed
	}
	switch {
	case sim.Spec.Conversion != nil && sim.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter && left <= 1:
		set(Conversion, Info, "", "the conversion webhook no longer needs %s; with a single version left, spec.conversion.strategy can become None and the webhook can go", old)
	case sim.Spec.Conversion != nil && sim.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter:
		set(Conversion, Info, "", "the conversion webhook no longer needs to convert to or from %s; drop it from the webhook in its next release", old)
	default:
		set(Conversion, Info, "", "conversion strategy None: nothing to change")
	}
	return steps
}

// Next is the step retire stops at or takes: the first blocked step when
// any is blocked (retire then refuses before changing anything, since it
// could not finish), else the first step to do; nil when the workflow is
// complete.
func Next(steps []Step) *Step {
	for _, want := range []Status{Blocked, ToDo} {
		for i := range steps {
			if steps[i].Status == want {
				return &steps[i]
			}
		}
	}
	return nil
}

// successorOf is the version clients should move to: the storage version
// unless that is old, else the highest-priority other served version.
func successorOf(crd *apiextensionsv1.CustomResourceDefinition, old string) string {
	if s := lifecycle.StorageVersion(crd); s != "" && s != old {
		return s
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != old {
			served = append(served, v.Name)
		}
	}
	if len(served) == 0 {
		return ""
	}
	return lifecycle.ByPriority(served)[0]
}

func orPlaceholder(v string) string {
	if v == "" {
		return "<new-version>"
	}
	return v
}

// firstCommand is the kubectl crdversion command quoted in the first failed
// check, or fallback.
func firstCommand(failed edit.Checks, fallback string) string {
	for _, c := range failed {
		if i := strings.Index(c.Message, "(kubectl crdversion "); i >= 0 {
			rest := c.Message[i+1:]
			if j := strings.Index(rest, ")"); j >= 0 {
				return rest[:j]
			}
		}
	}
	return fallback
}

func sample(names []string) string {
	const n = 3
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
