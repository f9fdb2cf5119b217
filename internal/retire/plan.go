package retire

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// order is the workflow: each step's id, title and planner, in the order
// of the task page. Step numbers are positions in this list.
var order = []struct {
	id    StepID
	title func(old string) string
	plan  func(p *planner, s *Step)
}{
	{ClientsMoved, func(old string) string { return "clients moved off " + old }, (*planner).clients},
	{ReferencesMoved, func(old string) string { return "no owner reference, scale target or Helm release record names " + old }, (*planner).references},
	{Unserved, func(old string) string { return old + " unserved" }, (*planner).unserve},
	{StorageMoved, func(string) string { return "another version is the storage version" }, (*planner).storage},
	{Migrated, func(old string) string { return "objects migrated, storedVersions without " + old }, (*planner).migration},
	{ManagedFieldsClean, func(old string) string { return "no managedFields entry names " + old }, (*planner).managedFields},
	{Removed, func(old string) string { return old + " removed from spec.versions" }, (*planner).removal},
	{Conversion, func(string) string { return "conversion" }, (*planner).conversion},
}

// number is the step number of id (its position in order, from 1).
func number(id StepID) int { return stepNumbers[id] }

var stepNumbers = map[StepID]int{}

func init() {
	for i, o := range order {
		stepNumbers[o.id] = i + 1
	}
}

// Plan evaluates the steps of retiring old from crd, in order. A step that
// is to do is assumed taken when the later steps are evaluated (they see
// the CRD as it would leave it), so a plan with no blocked step runs to the
// end; after the first blocked step the later steps say what they would
// do, but retire stops there. Plan does not change crd.
func Plan(crd *apiextensionsv1.CustomResourceDefinition, old string, f Facts) []Step {
	p := &planner{old: old, f: f, name: crd.Name, group: crd.Spec.Group, kind: crd.Spec.Names.Kind, sim: crd.DeepCopy(),
		inSpec: lifecycle.FindVersion(crd, old) != nil, storageVersion: lifecycle.StorageVersion(crd), successor: successorOf(crd, old)}
	if p.inSpec && p.storageVersion != "" && p.storageVersion != old {
		_, basis := lifecycle.OrderOf(crd, f.VersionOrder).Compare(old, p.storageVersion)
		p.unordered = basis == lifecycle.OrderUnknown
	}
	for i, o := range order {
		s := Step{Number: i + 1, ID: o.id, Title: o.title(old)}
		o.plan(p, &s)
		p.steps = append(p.steps, s)
	}
	return p.steps
}

// planner is the state the step planners share.
type planner struct {
	old, name, group, kind string
	f                      Facts
	// sim is the CRD as the steps evaluated so far leave it.
	sim *apiextensionsv1.CustomResourceDefinition
	// inSpec: OLD is in spec.versions as read; storageVersion is the
	// storage version as read; successor is the version clients move to.
	inSpec                    bool
	storageVersion, successor string
	// unordered: nothing says whether OLD is older than the storage
	// version (see lifecycle.Order).
	unordered bool
	// steps are the steps evaluated so far.
	steps []Step
}

// version is OLD in the simulated CRD, nil when it is not in spec.versions.
func (p *planner) version() *apiextensionsv1.CustomResourceDefinitionVersion {
	return lifecycle.FindVersion(p.sim, p.old)
}

// retire is the retire command to run next: with flag added to the
// flags this run was given (--migrate, --clean-managed-fields,
// --skip-usage-check, the usage check's), so that pasting it does not
// drop what the user already chose and then stop at the step that needed
// it.
func (p *planner) retire(flag string) []lifecycle.Command {
	return []lifecycle.Command{command(p.name, p.old, choices{migrate: p.f.Migrate, clean: p.f.CleanManagedFields, skip: p.f.SkipUsage,
		repairRefs: p.f.RepairReferences, skipRefs: p.f.SkipReferences, order: p.f.VersionOrder, carried: p.f.Carried}, flag)}
}

// choices are the flags of a retire run that every retire command it
// prints carries.
type choices struct {
	migrate, clean, skip bool
	repairRefs, skipRefs bool
	order                []string
	carried              []lifecycle.Flag
}

// command is "retire CRD OLD" with the flags of c, and flag (a boolean
// flag's name, or "") added.
func command(crd, old string, c choices, flag string) lifecycle.Command {
	cmd := lifecycle.Crdversion("retire", crd, old)
	for _, f := range []struct {
		name string
		on   bool
	}{{"migrate", c.migrate}, {"clean-managed-fields", c.clean}, {"repair-references", c.repairRefs}, {"skip-usage-check", c.skip}, {"skip-reference-check", c.skipRefs}} {
		if f.on || f.name == flag {
			cmd = cmd.With(f.name, "")
		}
	}
	if flag != "" && !slices.Contains([]string{"migrate", "clean-managed-fields", "repair-references", "skip-usage-check", "skip-reference-check"}, flag) {
		cmd = cmd.With(flag, "")
	}
	if len(c.order) > 0 {
		cmd = cmd.With("version-order", strings.Join(c.order, ","))
	}
	for _, f := range c.carried {
		cmd = cmd.WithFlag(f)
	}
	return cmd
}

func (p *planner) promoteStorage() []lifecycle.Command {
	return []lifecycle.Command{lifecycle.Crdversion("promote-storage", p.name, cmp.Or(p.successor, lifecycle.PlaceholderNewVersion))}
}

// set gives s its status, the commands that unblock it and its message.
func (s *Step) set(st Status, run []lifecycle.Command, format string, args ...any) {
	s.Status, s.Run, s.Command, s.Message = st, run, lifecycle.RenderAll(run, nil), fmt.Sprintf(format, args...)
}

// 1. Clients moved off OLD: the client-usage evidence while OLD is served.
func (p *planner) clients(s *Step) {
	old, f, v := p.old, p.f, p.version()
	switch {
	case p.unordered:
		// Retire removes the older API; nothing says that OLD is it.
		s.set(Blocked, nil, "nothing says whether %s is older than the storage version %s (names outside Kubernetes version form that status.storedVersions does not order), and if %s is the newer API this removes it; if it is the older, give the order with --version-order listing %s, %s, oldest first",
			old, p.storageVersion, old, old, p.storageVersion)
	case v == nil:
		s.set(Done, nil, "%s is not in spec.versions", old)
	case !v.Served:
		s.set(Done, nil, "%s is not served, so no client can use it", old)
	case f.SkipUsage:
		s.set(Skipped, nil, "client usage of %s was NOT checked (--skip-usage-check)", old)
	case f.Usage == nil:
		s.set(ToDo, nil, "measure the client usage of %s (every API server instance's /metrics or Prometheus, managedFields, audit logs)", old)
	case f.Usage.Verdict == usage.InUse:
		s.set(Blocked, p.retire(""), "%s: move them (and the controller) to %s, then re-run", f.Usage.Message(), cmp.Or(p.successor, lifecycle.PlaceholderNewVersion))
		s.Evidence = f.Usage.Evidence()
		// The first way out, moving the clients, is the message.
		for _, w := range f.Usage.InUseWaysOut()[1:] {
			s.Evidence = append(s.Evidence, "way out: "+w)
		}
	case f.Usage.Verdict == usage.Unknown:
		s.set(Blocked, p.retire(""), "%s", f.Usage.Message())
		s.Evidence = f.Usage.Evidence()
		for _, w := range f.Usage.WaysOut() {
			s.Evidence = append(s.Evidence, "way out: "+w)
		}
	default:
		s.set(Done, nil, "%s", f.Usage.Message())
		s.Evidence = f.Usage.Evidence()
	}
}

// withoutOld is the CRD without OLD in spec.versions.
func (p *planner) withoutOld() *apiextensionsv1.CustomResourceDefinition {
	out := p.sim.DeepCopy()
	out.Spec.Versions = slices.DeleteFunc(out.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == p.old })
	return out
}

// 2. No owner reference, scale target or Helm release record names OLD: every listable resource read, the
// references rewritten to the storage version with --repair-references.
func (p *planner) references(s *Step) {
	old, f, v := p.old, p.f, p.version()
	gv := p.group + "/" + old
	// Retiring OLD unserves it, then removes it: the admission rules it
	// leaves blind are those of both steps at once.
	admission := references.AdmissionRulesCheck(p.sim, p.withoutOld(), old, f.AdmissionRules, f.AdmissionErr)
	switch {
	case !p.inSpec:
		s.set(Done, nil, "%s is not in spec.versions (kubectl crdversion doctor finds references to removed versions)", old)
	case f.SkipReferences:
		s.set(Skipped, nil, "references to %s were NOT checked (--skip-reference-check)", gv)
	case f.References == nil:
		s.set(ToDo, nil, "look for owner references, scale targets and Helm release records that name %s (the metadata of every listable resource, HorizontalPodAutoscalers and ScaledObjects whole), and admission rules that match only through it", gv)
	case admission.Outcome == edit.Fail:
		s.set(Blocked, p.retire(""), "%s", admission.Message)
		s.Evidence = append(s.Evidence, admission.Details...)
	case len(f.References.Dependents) == 0 && f.References.Complete():
		s.set(Done, nil, "no owner reference, scale target or Helm release record names %s (%d objects of %d resources read)", gv, f.References.Objects, f.References.Resources)
	case !f.References.Complete():
		inv := f.References
		s.set(Blocked, p.retire(""), "references to %s unknown: %d resource(s) could not be read (%d reference(s) found in the rest); grant list on them, or make their lists answer, and re-run — or re-run with --skip-reference-check to go on without knowing",
			gv, len(inv.Unseen), len(inv.Dependents))
		for _, u := range inv.Unseen {
			s.Evidence = append(s.Evidence, "not read: "+u.Name()+": "+u.Reason)
		}
	case v.Storage:
		s.set(Blocked, p.promoteStorage(), "%s %s %s, the storage version: they are rewritten to the storage version once another version is", references.Count(f.References.Dependents), references.Verb(f.References.Dependents), gv)
	case f.RepairReferences && len(f.ReferenceRefusals) > 0:
		s.set(Blocked, nil, "the API server refuses the rewrite of %d of %d reference(s) to %s/%s (server-side dry run; %s); nothing is rewritten or unserved until it accepts them all",
			len(f.ReferenceRefusals), len(f.References.Dependents), p.group, p.storageVersion, f.ReferenceRefusals[0])
		s.Evidence = append(s.Evidence, f.ReferenceRefusals...)
	case f.RepairReferences:
		s.set(ToDo, nil, "rewrite %s from %s to %s/%s (%s)",
			references.Count(f.References.Dependents), gv, p.group, p.storageVersion, references.HowRepaired(f.References.Dependents))
	default:
		s.set(Blocked, p.retire("repair-references"), "%s %s %s %s: once %s is unserved, %s; rewrite them to %s/%s first",
			references.Count(f.References.Dependents), references.Verb(f.References.Dependents), gv, p.kind, old, references.Consequence(f.References.Dependents), p.group, p.storageVersion)
	}
	if f.References != nil {
		for _, rc := range f.References.ByResource(3) {
			s.Evidence = append(s.Evidence, rc.String())
		}
	}
}

// 3. OLD unserved: the edit's preflight, then the API server's answer to
// its dry run.
func (p *planner) unserve(s *Step) {
	old, v := p.old, p.version()
	if v == nil || !v.Served {
		s.set(Done, nil, "%s is not served", old)
		return
	}
	if v.Storage {
		s.set(Blocked, p.promoteStorage(), "%s is the storage version and must stay served until another version is", old)
		return
	}
	r := edit.SetServed(p.sim, old, false)
	if failed := r.Checks.Failed(); len(failed) > 0 {
		s.set(Blocked, firstRun(failed, []lifecycle.Command{lifecycle.Crdversion("serve", p.name, cmp.Or(p.successor, lifecycle.PlaceholderNewVersion))}), "%s", failed[0].Message)
		return
	}
	answer, asked := p.f.Writes[Unserved]
	if asked && answer.Refused != "" {
		s.set(Blocked, nil, "the API server refuses to unserve %s (server-side dry run of the write): %s", old, answer.Refused)
		return
	}
	s.set(ToDo, nil, "set served: false on %s", old)
	if asked {
		s.Evidence = append(s.Evidence, answer.evidence(old))
	}
	s.write = r.Edited
	p.sim = r.Edited
}

// 4. Another version is the storage version.
func (p *planner) storage(s *Step) {
	switch v := p.version(); {
	case v != nil && v.Storage:
		s.set(Blocked, p.promoteStorage(), "%s is the storage version", p.old)
	case p.storageVersion == "":
		s.set(Blocked, nil, "spec.versions has no storage version")
	default:
		s.set(Done, nil, "the storage version is %s", p.storageVersion)
	}
}

// 5. Objects migrated and storedVersions trimmed, with --migrate: the
// migration's server-side dry run decides whether it can be taken.
func (p *planner) migration(s *Step) {
	old, f, v, sim := p.old, p.f, p.version(), p.sim
	stored := strings.Join(sim.Status.StoredVersions, ", ")
	// storedVersions without OLD is a claim: a status trimmed by hand says
	// the same while every object is still stored at OLD. Only a pass of
	// migrate that found every object current, or no object at all,
	// proves it before the removal makes such objects unreadable.
	claim := !slices.Contains(sim.Status.StoredVersions, old)
	switch {
	case claim && f.MigratedInRun:
		s.set(Done, nil, "status.storedVersions is [%s], and every object was rewritten at %s in this run", stored, p.storageVersion)
	case claim && !p.inSpec:
		s.set(Done, nil, "status.storedVersions is [%s]", stored)
	case claim && f.Objects == nil:
		s.set(ToDo, nil, "status.storedVersions is [%s], a claim: the objects are counted next", stored)
	case claim && *f.Objects == 0:
		s.set(Done, nil, "status.storedVersions is [%s] and the CRD has no object", stored)
	case claim && !f.Migrate:
		s.set(Blocked, p.retire("migrate"), "status.storedVersions [%s] does not list %s, but that is a claim (a status trimmed by hand says the same): nothing proves that none of the %d object(s) is still stored at %s, which the removal would make unreadable; retire with --migrate rewrites every object still stored there first (objects already at %s are not written)",
			stored, old, *f.Objects, old, p.storageVersion)
	case v == nil:
		s.set(Blocked, []lifecycle.Command{lifecycle.RestoreUnserved(p.name, old)},
			"status.storedVersions lists %s but spec.versions does not: objects stored at it are unreadable until it is restored (unserved); then kubectl crdversion migrate %s", old, p.name)
	case v.Storage:
		s.set(Blocked, nil, "waits for step %d: objects can move off %s only once another version is the storage version", number(StorageMoved), old)
	case !f.Migrate:
		s.set(Blocked, p.retire("migrate"), "status.storedVersions [%s] lists %s: objects may still be stored at it; migrate them (kubectl crdversion migrate %s, or retire with --migrate)",
			stored, old, p.name)
	case f.MigrationCheck != nil && f.MigrationCheck.TrimRefused != "":
		s.set(Blocked, nil, "the API server accepts the rewrite of all %d object(s) at %s but refuses the trim of status.storedVersions [%s] to [%s] that ends the migration (server-side dry run of the status write): %s; nothing is unserved or rewritten until it accepts it",
			f.MigrationCheck.Total, p.storageVersion, stored, p.storageVersion, f.MigrationCheck.TrimRefused)
	case f.MigrationCheck != nil && f.MigrationCheck.Error != "":
		s.set(Blocked, nil, "the server-side dry run of the migration could not go through the objects: %s; nothing is unserved or rewritten until it can", f.MigrationCheck.Error)
	case f.MigrationCheck != nil && f.MigrationCheck.Failed > 0:
		mc := f.MigrationCheck
		first := "see the evidence"
		if len(mc.Failures) > 0 {
			first = mc.Failures[0].Object + ": " + mc.Failures[0].Message
		}
		s.set(Blocked, nil, "the API server refuses the migration's rewrite of %d of %d object(s) at %s (server-side dry run; %s); nothing is unserved or rewritten until every object can be rewritten (kubectl crdversion migrate %s --dry-run=server lists them)",
			mc.Failed, mc.Total, p.storageVersion, first, p.name)
		for _, o := range mc.Failures {
			s.Evidence = append(s.Evidence, o.Object+": "+o.Message)
		}
	case claim:
		s.set(ToDo, nil, "rewrite every object still stored at %s at %s (migrate): status.storedVersions [%s] does not list %s, but only the rewrite proves it", old, p.storageVersion, stored, old)
		if mc := f.MigrationCheck; mc != nil {
			s.Evidence = append(s.Evidence, fmt.Sprintf("the API server accepts the rewrite of all %d object(s) at %s (server-side dry run of the migration)", mc.Total, p.storageVersion))
		}
	default:
		s.set(ToDo, nil, "rewrite every object at %s, then trim status.storedVersions [%s] to [%s] (migrate)", p.storageVersion, stored, p.storageVersion)
		if mc := f.MigrationCheck; mc != nil {
			s.Evidence = append(s.Evidence, fmt.Sprintf("the API server accepts the rewrite of all %d object(s) at %s (server-side dry run of the migration)", mc.Total, p.storageVersion))
		}
		p.sim = sim.DeepCopy()
		p.sim.Status.StoredVersions = slices.DeleteFunc(slices.Clone(sim.Status.StoredVersions), func(s string) bool { return s == old })
	}
}

// 6. No managedFields entry names OLD.
func (p *planner) managedFields(s *Step) {
	old, f, v := p.old, p.f, p.version()
	switch {
	case !p.inSpec:
		s.set(Done, nil, "%s is not in spec.versions", old)
	case f.StaleManagedFields == nil:
		s.set(ToDo, nil, "look for objects whose managedFields name %s/%s", p.group, old)
	case len(*f.StaleManagedFields) == 0:
		s.set(Done, nil, "no object's managedFields names %s/%s", p.group, old)
	case f.CleanManagedFields && !v.Storage && !f.SkipUsage && activeWriters(f.Writers) != nil:
		// Issue 33: the advice after unserve is this step, and a manager
		// that applies the same object again and again keeps its entry's
		// time: relabelling it would hide a client, not a leftover.
		w := f.Writers
		s.set(Blocked, p.retire(""), "%s wrote through %s/%s inside the last %s (the usage window and --usage-history): a client, not a leftover; its entries are not rewritten. Move it to %s, then re-run; once you know it no longer writes through %s, --usage-history 0 says so (or --skip-usage-check)",
			strings.Join(activeWriters(w), ", "), p.group, old, roundSeconds(max(w.WindowSeconds, w.HistorySeconds)), p.storageVersion, old)
		s.Evidence = append(s.Evidence, w.Seen...)
	case f.CleanManagedFields && !v.Storage && !f.SkipUsage && f.Writers != nil && f.Writers.Verdict == usage.Unknown:
		// Not knowing whether a manager still writes is not knowing that
		// none does (the scan failed, or an entry has no time).
		s.set(Blocked, p.retire(""), "whether a field manager still writes through %s/%s is unknown (%s): its entries are not rewritten until it is known, or the usage check is skipped (--skip-usage-check)",
			p.group, old, strings.Join(f.Writers.Unseen, "; "))
	case f.CleanManagedFields && !v.Storage:
		s.set(ToDo, nil, "rewrite the managedFields entries of %d object(s) from %s to %s", len(*f.StaleManagedFields), old, p.storageVersion)
	default:
		stale := *f.StaleManagedFields
		s.set(Blocked, p.retire("clean-managed-fields"),
			"%d object(s) have managedFields entries naming %s/%s (%s): once %s is removed, server-side apply on them fails with \"request to convert CR to an invalid group/version\" (kubernetes/kubernetes#111937); rewrite the entries first",
			len(stale), p.group, old, sample(stale), old)
		if v.Storage {
			s.Run, s.Command, s.Message = nil, "", s.Message+", once another version is the storage version"
		}
	}
}

// 7. OLD removed, evaluated on the CRD as the steps before leave it; the
// API server's answer to the removal's dry run.
func (p *planner) removal(s *Step) {
	old := p.old
	if !p.inSpec {
		s.set(Done, nil, "%s is not in spec.versions", old)
		return
	}
	r := edit.RemoveVersion(p.sim, old)
	answer, asked := p.f.Writes[Removed]
	earlier := slices.IndexFunc(p.steps, func(s Step) bool { return s.Status == Blocked })
	switch failed := r.Checks.Failed(); {
	case earlier >= 0:
		// What keeps the removal back is that step's; the removal's own
		// checks would name the same cause again, with commands for it.
		s.set(Blocked, nil, "waits for step %d", p.steps[earlier].Number)
	case len(failed) > 0:
		var msgs []string
		var run []lifecycle.Command
		for _, c := range failed {
			msgs = append(msgs, c.Message)
			run = append(run, c.Run...)
		}
		s.set(Blocked, run, "%s", strings.Join(msgs, "; "))
	case asked && answer.Refused != "" && !answer.Deferred:
		s.set(Blocked, nil, "the API server refuses the removal of %s (server-side dry run of the write): %s", old, answer.Refused)
	default:
		s.set(ToDo, nil, "remove %s from spec.versions (the write carries the CRD's resourceVersion as checked)", old)
		if asked {
			s.Evidence = append(s.Evidence, answer.evidence(old))
		}
		s.write = r.Edited
		p.sim = r.Edited
	}
}

// 8. Conversion: what the webhook and strategy no longer need.
func (p *planner) conversion(s *Step) {
	left := len(p.sim.Spec.Versions)
	if p.version() != nil {
		left-- // once removed
	}
	switch {
	case lifecycle.UsesWebhook(p.sim) && left <= 1:
		s.set(Info, nil, "the conversion webhook no longer needs %s; with a single version left, spec.conversion.strategy can become None and the webhook can go", p.old)
	case lifecycle.UsesWebhook(p.sim):
		s.set(Info, nil, "the conversion webhook no longer needs to convert to or from %s; drop it from the webhook in its next release", p.old)
	default:
		s.set(Info, nil, "conversion strategy None: nothing to change")
	}
}

// evidence is the answer as a line of a step's evidence.
func (w WriteCheck) evidence(old string) string {
	switch {
	case w.Deferred:
		return fmt.Sprintf("the API server checked the write only in part (server-side dry run): status.storedVersions lists %s until step %d trims it, and the API server validates that before admission runs; retire asks again before removing %s", old, number(Migrated), old)
	case w.Refused != "":
		return "the API server refuses the write (server-side dry run): " + w.Refused
	}
	return "the API server accepts the write (server-side dry run)"
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

// firstRun is the fix of the first failed check that has one, or fallback.
func firstRun(failed edit.Checks, fallback []lifecycle.Command) []lifecycle.Command {
	for _, c := range failed {
		if len(c.Run) > 0 {
			return c.Run
		}
	}
	return fallback
}

// sample names the first three of refs, then how many more.
func sample(refs []ObjectRef) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	return lifecycle.Some(names, 3)
}

// activeWriters names the managers of w that wrote inside its window or
// history span ("manager my-operator (Apply)"); nil when none (or w is nil).
func activeWriters(w *usage.SourceReport) []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, c := range w.Clients {
		if c.Active() {
			out = append(out, fmt.Sprintf("manager %s (%s)", c.Manager, c.Operation))
		}
	}
	return out
}

func roundSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
