// Package upgrade predicts what applying a new release's
// CustomResourceDefinition over the installed one does: whether the API
// server accepts the update, whether stored data is lost, how kubectl's
// default version changes, which served versions disappear, and which
// kubectl crdversion commands, run in order, make the upgrade safe.
//
// The rules are pure (Check). Checker reads the live CRDs and asks the API
// server for a dry run of each apply through the narrow Cluster interface.
package upgrade

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// Verdicts of Plan.Apply.
const (
	Accepted = "Accepted"
	Rejected = "Rejected"
)

// Outcomes of a server-side dry run.
const (
	DryRunAccepted = "accepted"
	DryRunRejected = "rejected"
	DryRunSkipped  = "skipped"
)

// Plan is the prediction for one CRD of the release.
type Plan struct {
	Name string `json:"name"`
	// Source is the manifest document the CRD comes from.
	Source string `json:"source"`
	// APIServer is the version of the API server the plan was checked
	// against ("v1.37.2"): its update rules and dry run decide the
	// verdict, which may differ on another version (for example the
	// caBundle validation of 1.31). Empty when it was not read.
	APIServer string `json:"apiServer,omitempty"`
	// Predicted is true for a check without a cluster (check-upgrade
	// --from --to): the previous release stands for the installed CRDs,
	// and no API server confirmed the verdict (see Offline).
	Predicted bool `json:"predicted,omitempty"`
	// Installed is false when the cluster has no such CRD (applying
	// creates it).
	Installed          bool     `json:"installed"`
	LiveStorageVersion string   `json:"liveStorageVersion,omitempty"`
	NewStorageVersion  string   `json:"newStorageVersion"`
	StoredVersions     []string `json:"storedVersions,omitempty"`
	LiveDefaultVersion string   `json:"liveDefaultVersion,omitempty"`
	NewDefaultVersion  string   `json:"newDefaultVersion"`
	// RemovedServedVersions are served now and removed or unserved by the
	// release: clients that use them break.
	RemovedServedVersions []string `json:"removedServedVersions,omitempty"`
	// Apply is Accepted or Rejected: the prediction from the API server's
	// update rules (Reasons), overridden by the server dry run when there
	// is one.
	Apply   string   `json:"apply"`
	Reasons []string `json:"reasons,omitempty"`
	// Static is the verdict from the update rules alone.
	Static string `json:"static"`
	// ServerDryRun is accepted, rejected or skipped; ServerMessage the API
	// server's answer when it rejected, or why the dry run was skipped.
	ServerDryRun  string `json:"serverDryRun"`
	ServerMessage string `json:"serverMessage,omitempty"`
	// DataLoss is true when an error-level schema finding says stored data
	// is dropped or stored objects are rejected on their next write.
	DataLoss bool                 `json:"dataLoss"`
	Findings []schemadiff.Finding `json:"findings"`
	// Run are the commands that make the upgrade safe, in order; the last
	// applies the release. Empty when the release can be applied as it is
	// (then only the apply would be listed) or when no command fixes it.
	// Fix are their renderings (see lifecycle.Command.Render).
	Fix []string            `json:"fix,omitempty"`
	Run []lifecycle.Command `json:"run,omitempty"`
	// StopsBefore is set when Run stops short of the apply because the
	// next step loses data: "migrate" (CodeMigrationPrunes) or "apply"
	// (an error finding on the release itself). Then says in words what
	// is lost, how to keep it, and that only the user can accept it: no
	// printed command loses data.
	StopsBefore string `json:"stopsBefore,omitempty"`
	// Immutable is set when the release changes the installed CRD's
	// scope, kind or group (Checker only: it counts the objects at
	// stake); Fix is then empty.
	Immutable *Immutable `json:"immutable,omitempty"`
	// Deletion is set when the Helm release no longer renders this
	// installed CRD (Checker with a HelmRelease only): helm upgrade
	// deletes it with every object unless it keeps the resource policy.
	// Apply is then Deleted, and Fix the keep annotation.
	Deletion *Deletion `json:"deletion,omitempty"`
	Then     string    `json:"then,omitempty"`
	// then renders Then with the connection flags its apply command
	// repeats (see Render); nil when StopsBefore is empty.
	then func(global []lifecycle.Flag) string
}

// Steps that Plan.StopsBefore names.
const (
	StopMigrate = "migrate"
	StopApply   = "apply"
)

// rejections are the finding codes for which the API server refuses the
// update of an installed CRD.
var rejections = []string{schemadiff.CodeStoredVersionRemoved, schemadiff.CodeScopeChanged, schemadiff.CodeKindChanged,
	schemadiff.CodeGroupChanged, schemadiff.CodeStorageVersionCount}

// Check predicts the outcome of applying the manifest CRD next over live
// (nil when the cluster has no such CRD). applyCommand is the command that
// applies the release, printed as the last fix step.
func Check(live, next *apiextensionsv1.CustomResourceDefinition, source string, applyCommand lifecycle.Command) Plan {
	p := Plan{
		Name: next.Name, Source: source, Installed: live != nil,
		NewStorageVersion: lifecycle.StorageVersion(next), NewDefaultVersion: lifecycle.DefaultVersion(next),
		Static: Accepted, ServerDryRun: DryRunSkipped, Findings: []schemadiff.Finding{},
	}
	if live == nil {
		if n := len(lifecycle.StorageVersions(next)); n != 1 {
			p.Static = Rejected
			msg := fmt.Sprintf("%d versions have storage: true; the API server rejects a CRD without exactly one", n)
			p.Reasons = append(p.Reasons, msg)
			p.Findings = append(p.Findings, schemadiff.Finding{Code: schemadiff.CodeStorageVersionCount, Severity: lifecycle.SeverityError, Path: "spec.versions", Message: msg})
		}
		if f, ok := caBundleFinding(nil, next); ok {
			p.Findings = append(p.Findings, f)
		}
		p.nameRule(next)
		p.Apply = p.Static
		return p
	}
	p.LiveStorageVersion = lifecycle.StorageVersion(live)
	p.LiveDefaultVersion = lifecycle.DefaultVersion(live)
	p.StoredVersions = append([]string{}, live.Status.StoredVersions...)
	p.Findings = schemadiff.CRDs(live, next)
	for _, f := range p.Findings {
		switch {
		case f.Code == schemadiff.CodeStorageVersionRemoved:
			// Always with StoredVersionRemoved: the storage version is
			// in storedVersions.
		case slices.Contains(rejections, f.Code):
			p.Static = Rejected
			p.Reasons = append(p.Reasons, f.Message)
		case f.Code == schemadiff.CodeVersionRemoved && f.Severity == lifecycle.SeverityWarning,
			f.Code == schemadiff.CodeVersionUnserved:
			p.RemovedServedVersions = append(p.RemovedServedVersions, f.Version)
		}
	}
	p.Findings = append(p.Findings, olderReleases(live, next)...)
	p.Findings = append(p.Findings, migrationLosses(live, next)...)
	p.Findings = append(p.Findings, releaseLosses(live, next)...)
	if f, ok := caBundleFinding(live, next); ok {
		p.Findings = append(p.Findings, f)
		if f.Severity == lifecycle.SeverityError {
			p.Static = Rejected
			p.Reasons = append(p.Reasons, f.Message)
		}
	}
	p.nameRule(next)
	var migrateLoses, applyLoses []string
	for _, f := range p.Findings {
		switch {
		case f.Code == CodeMigrationPrunes:
			p.DataLoss = true
			migrateLoses = append(migrateLoses, f.Version)
		case f.Severity == lifecycle.SeverityError && !slices.Contains(rejections, f.Code) && f.Code != schemadiff.CodeStorageVersionRemoved && f.Code != CodeCABundleInvalid && f.Code != CodeNameMismatch:
			p.DataLoss = true
			if at := strings.TrimSpace(f.Version + " " + f.Path); !slices.Contains(applyLoses, at) {
				applyLoses = append(applyLoses, at)
			}
		}
	}
	schemadiff.Sort(p.Findings)
	p.Apply = p.Static
	p.Run, p.StopsBefore, p.then = fixSteps(live, next, applyCommand, migrateLoses, applyLoses)
	p.Render(nil)
	return p
}

// ApplyCommand is the command that applies the release's files: kubectl
// apply --server-side with one -f per file (-R with recursive).
func ApplyCommand(files []string, recursive bool) lifecycle.Command {
	c := lifecycle.Kubectl("apply").With("server-side", "")
	for _, f := range files {
		c = c.With("f", f)
	}
	if recursive {
		c = c.With("R", "")
	}
	return c
}

// Render sets Fix, Run rendered one line per command, and Then, with the
// connection flags global (see lifecycle.Command.Render).
func (p *Plan) Render(global []lifecycle.Flag) {
	p.Fix = nil
	if len(p.Run) > 0 {
		p.Fix = make([]string, len(p.Run))
		for i, c := range p.Run {
			p.Fix[i] = c.Render(global)
		}
	}
	if p.then != nil {
		p.Then = p.then(global)
	}
}

// SetServerDryRun records the API server's answer to a dry-run update; it
// decides the verdict. fields are the fields the refusal names. A
// rejection that no predicted error finding explains — the update rules
// predicted acceptance, or the server names a field none of their
// findings is about — becomes an error finding (CodeApplyRejected, with
// the server's message, at the first field not explained, "-" when it
// names none), so that the counts, the exit code and every output agree
// with the verdict, and a second reason is never hidden behind the first.
func (p *Plan) SetServerDryRun(outcome, message string, fields ...string) {
	p.ServerDryRun, p.ServerMessage = outcome, message
	switch outcome {
	case DryRunAccepted:
		p.Apply = Accepted
	case DryRunRejected:
		p.Apply = Rejected
		field := ""
		if p.Static == Accepted {
			field = "-"
			if len(fields) > 0 {
				field = fields[0]
			}
		}
		for _, f := range fields {
			if !p.explains(f) {
				field = f
				break
			}
		}
		if field == "" {
			return
		}
		p.Findings = append(p.Findings, schemadiff.Finding{Code: CodeApplyRejected, Severity: lifecycle.SeverityError, Path: field,
			Message: "the API server refused a server-side dry run of the apply: " + message})
		schemadiff.Sort(p.Findings)
	}
}

// rejectedAt are the fields of the API server's refusal that each
// predicted rejection is about (its validation's field paths, which
// differ from the findings' for caBundle).
var rejectedAt = map[string][]string{
	schemadiff.CodeStoredVersionRemoved: {"status.storedVersions"},
	schemadiff.CodeScopeChanged:         {"spec.scope"},
	schemadiff.CodeKindChanged:          {"spec.names.kind"},
	schemadiff.CodeGroupChanged:         {"spec.group", "metadata.name"},
	schemadiff.CodeStorageVersionCount:  {"spec.versions"},
	CodeCABundleInvalid:                 {"spec.conversion.webhookClientConfig.caBundle"},
	CodeNameMismatch:                    {"metadata.name"},
}

// explains tells whether an error finding of p predicts the API server's
// refusal at field.
func (p *Plan) explains(field string) bool {
	for _, f := range p.Findings {
		if f.Severity != lifecycle.SeverityError {
			continue
		}
		for _, at := range rejectedAt[f.Code] {
			if field == at || strings.HasPrefix(field, at+".") || strings.HasPrefix(field, at+"[") {
				return true
			}
		}
	}
	return false
}

// nameRule adds the CodeNameMismatch finding (a rejection) when next's
// name is not spec.names.plural + "." + spec.group.
func (p *Plan) nameRule(next *apiextensionsv1.CustomResourceDefinition) {
	want := next.Spec.Names.Plural + "." + next.Spec.Group
	if next.Name == want {
		return
	}
	msg := fmt.Sprintf("the CRD is named %s, but its name must be spec.names.plural + \".\" + spec.group (%s): the API server refuses it; a CRD of another group or plural is a new CRD beside this one", next.Name, want)
	p.Static = Rejected
	p.Reasons = append(p.Reasons, msg)
	p.Findings = append(p.Findings, schemadiff.Finding{Code: CodeNameMismatch, Severity: lifecycle.SeverityError, Path: "metadata.name", Message: msg})
}

// CodeNameMismatch is the finding that the release's CRD is named other
// than spec.names.plural + "." + spec.group, which the API server refuses
// on create and update.
const CodeNameMismatch = "NameMismatch"

// CodeApplyRejected is the finding that the API server refused the
// release's CRD in a server-side dry run (its message follows).
const CodeApplyRejected = "ApplyRejected"

// CodeCABundleInvalid is the finding that the release's conversion webhook
// carries a caBundle that holds no PEM certificate (a placeholder such as
// "Cg==", one newline). Since Kubernetes 1.31 the API server validates it
// on every CRD write: a new CRD is created but not served
// (Established=False, reason InvalidCABundle) until a valid bundle is set,
// and an update that turns the valid bundle of an Established CRD into an
// invalid one is rejected (kubernetes/kubernetes#124061).
const CodeCABundleInvalid = "CABundleInvalid"

// caBundleFinding is the CodeCABundleInvalid finding of next over live
// (nil: not installed); ok is false when next's bundle is empty (left to
// an injector) or holds a certificate. It is an error when live is
// Established with a valid bundle (the update is rejected), a warning
// otherwise (the CRD is not served until the bundle is valid). The field
// managers that own live's bundle are named: the manifest should leave the
// field to them.
func caBundleFinding(live, next *apiextensionsv1.CustomResourceDefinition) (schemadiff.Finding, bool) {
	bundle := caBundle(next)
	if len(bundle) == 0 || holdsCertificate(bundle) {
		return schemadiff.Finding{}, false
	}
	f := schemadiff.Finding{Code: CodeCABundleInvalid, Severity: lifecycle.SeverityWarning, Path: "spec.conversion.webhook.clientConfig.caBundle"}
	what := fmt.Sprintf("the release's conversion webhook caBundle (%d bytes) holds no PEM certificate (a placeholder, or not a certificate)", len(bundle))
	liveValid := holdsCertificate(caBundle(live))
	switch {
	case live == nil:
		f.Message = what + ": the API server (1.31 and later) creates the CRD but does not serve it (Established=False, InvalidCABundle) until a valid bundle is set"
	case liveValid && apihelpers.IsCRDConditionTrue(live, apiextensionsv1.Established):
		f.Severity = lifecycle.SeverityError
		f.Message = what + ", over the valid bundle of the installed CRD: the API server (1.31 and later) rejects the update"
	default:
		f.Message = what + ": the API server does not serve the CRD until a valid bundle is set"
	}
	// Whoever wrote a valid live bundle is its injector; whoever wrote an
	// invalid one is no injector to leave it to.
	var owners []string
	if liveValid {
		owners = managedfields.Owners(live.ManagedFields, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	}
	if len(owners) > 0 {
		f.Message += fmt.Sprintf("; the installed bundle is written by field manager %s: remove caBundle from the manifest and leave it to that injector", strings.Join(owners, ", "))
	} else {
		f.Message += "; remove caBundle from the manifest and have a CA injector (for example cert-manager's cainjector) set it"
	}
	return f, true
}

// holdsCertificate tells whether bundle holds at least one PEM
// certificate, as the API server's caBundle validation requires.
func holdsCertificate(bundle []byte) bool {
	return len(bundle) > 0 && x509.NewCertPool().AppendCertsFromPEM(bundle)
}

// caBundle is crd's conversion webhook caBundle; nil without one.
func caBundle(crd *apiextensionsv1.CustomResourceDefinition) []byte {
	if crd == nil || crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
		return nil
	}
	return crd.Spec.Conversion.Webhook.ClientConfig.CABundle
}

// CodeMigrationPrunes is the finding that trimming storedVersions first
// (migrate, conversion strategy None) drops fields of objects stored at a
// version the release removes.
const CodeMigrationPrunes = "MigrationPrunesFields"

// storedToDrop are the entries of live's status.storedVersions that the
// release's spec.versions lacks: migrate must rewrite their objects and
// trim them before the API server accepts the release.
func storedToDrop(live, next *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, s := range live.Status.StoredVersions {
		if lifecycle.FindVersion(next, s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// beforeMigrate is live as it stands when the fix steps reach migrate:
// the release's storage version present (a copy of the live storage
// version's schema when the release adds it) and the storage version.
func beforeMigrate(live, next *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	c := live.DeepCopy()
	newStorage, liveStorage := lifecycle.StorageVersion(next), lifecycle.StorageVersion(live)
	if newStorage == "" || liveStorage == "" {
		return c
	}
	if lifecycle.FindVersion(c, newStorage) == nil {
		v := lifecycle.FindVersion(c, liveStorage).DeepCopy()
		v.Name = newStorage
		c.Spec.Versions = append(c.Spec.Versions, *v)
	}
	for i := range c.Spec.Versions {
		c.Spec.Versions[i].Storage = c.Spec.Versions[i].Name == newStorage
	}
	if !slices.Contains(c.Status.StoredVersions, newStorage) {
		c.Status.StoredVersions = append(c.Status.StoredVersions, newStorage)
	}
	return c
}

// migrationLosses: with conversion strategy None, migrate rewrites objects
// stored at old versions at the storage version, keeping only what its
// schema declares (lifecycle.MigrationLosses; migrate then refuses without
// --allow-pruning).
func migrationLosses(live, next *apiextensionsv1.CustomResourceDefinition) []schemadiff.Finding {
	if len(storedToDrop(live, next)) == 0 {
		return nil
	}
	c := beforeMigrate(live, next)
	var out []schemadiff.Finding
	for _, l := range lifecycle.MigrationLosses(c) {
		target := lifecycle.StorageVersion(c)
		out = append(out, schemadiff.Finding{Code: CodeMigrationPrunes, Severity: lifecycle.SeverityError, Version: l.Version, Path: "status.storedVersions",
			Message: fmt.Sprintf("conversion strategy None: %s; migrate refuses without --allow-pruning; if the objects use those fields, move the data to %s's fields first", l.Describe(target), target)})
	}
	return out
}

// CodeReleasePrunes is the finding that the release's storage version,
// which the fix steps add as a copy of the live storage version's schema
// and store every object at, declares fewer fields than that copy: with
// conversion strategy None, once the release is applied its schema prunes
// them from what clients read, and each object's next write loses them.
const CodeReleasePrunes = "ReleasePrunesStoredFields"

// releaseLosses: the release renames the storage version (removes the one
// stored, adds another), so the fix steps store the objects at a copy of
// the old schema under the new name; the apply then replaces it with the
// release's schema. schemadiff compares versions by name only, so this
// loss is found here.
func releaseLosses(live, next *apiextensionsv1.CustomResourceDefinition) []schemadiff.Finding {
	newStorage, liveStorage := lifecycle.StorageVersion(next), lifecycle.StorageVersion(live)
	if len(storedToDrop(live, next)) == 0 || newStorage == "" || liveStorage == "" || lifecycle.FindVersion(live, newStorage) != nil ||
		lifecycle.UsesWebhook(next) {
		return nil
	}
	lost := schema.PrunedFields(schema.Of(lifecycle.FindVersion(live, liveStorage)), schema.Of(lifecycle.FindVersion(next, newStorage)))
	if len(lost) == 0 {
		return nil
	}
	return []schemadiff.Finding{{Code: CodeReleasePrunes, Severity: lifecycle.SeverityError, Version: newStorage, Path: "spec.versions",
		Message: fmt.Sprintf("the release replaces the storage version %s with %s, which it adds: the steps below store every object at %s with %s's schema, and the release's %s schema lacks %s; once applied (conversion strategy None), those fields are pruned from what clients read and lost at each object's next write; declare them in the release's %s schema first",
			liveStorage, newStorage, newStorage, liveStorage, newStorage, strings.Join(lost, ", "), newStorage)}}
}

// fixSteps are the commands that let the API server accept the release
// when storedVersions names versions it removes: the release's storage
// version present and served, made the storage version, every object
// rewritten at it and storedVersions trimmed, then the apply. They are nil
// when nothing needs fixing, or when what blocks the release (scope, kind)
// has no fix short of re-creating the CRD. When migrate would lose data
// (migrateLoses: the stored versions of the migrationLosses findings), the
// steps stop before it; when the release itself would (applyLoses: where
// its error findings are), they stop before the apply; then says why in
// words: printed advice never accepts a loss for the user.
func fixSteps(live, next *apiextensionsv1.CustomResourceDefinition, applyCommand lifecycle.Command, migrateLoses, applyLoses []string) (steps []lifecycle.Command, stopsBefore string, then func(global []lifecycle.Flag) string) {
	drop := storedToDrop(live, next)
	if len(drop) == 0 {
		return nil, "", nil
	}
	if live.Spec.Scope != next.Spec.Scope || live.Spec.Names.Kind != next.Spec.Names.Kind || live.Spec.Group != next.Spec.Group {
		return nil, "", nil
	}
	newStorage, liveStorage := lifecycle.StorageVersion(next), lifecycle.StorageVersion(live)
	if newStorage == "" || liveStorage == "" {
		return nil, "", nil
	}
	cmd := lifecycle.Crdversion
	// Stored versions missing from the live spec already: their objects
	// are unreadable until the version is back (unserved).
	for _, s := range drop {
		if lifecycle.FindVersion(live, s) == nil {
			steps = append(steps, lifecycle.RestoreUnserved(live.Name, s))
		}
	}
	switch v := lifecycle.FindVersion(live, newStorage); {
	case v == nil:
		// The release's schema replaces the copy when it is applied.
		steps = append(steps, cmd("add-version", live.Name, newStorage).With("from", liveStorage))
	case !v.Served:
		steps = append(steps, cmd("serve", live.Name, newStorage))
	}
	if liveStorage != newStorage {
		steps = append(steps, cmd("promote-storage", live.Name, newStorage))
	}
	if len(migrateLoses) > 0 {
		return steps, StopMigrate, func(global []lifecycle.Flag) string {
			return fmt.Sprintf("conversion strategy None: objects stored at %s lose the fields that the %s finding names when rewritten at %s; migrate %s (kubectl crdversion migrate %s) looks for them on every object, read and as its managedFields record them, and refuses if one holds them: then keep them first (declare them in %s's schema, or use Webhook conversion) and run check-upgrade again; "+
				"only migrate --allow-pruning=PATHS with the paths its refusal names, given by you, ACCEPTS LOSING THEM; after migrate, apply the release (%s)", strings.Join(migrateLoses, ", "), CodeMigrationPrunes, newStorage, live.Name, live.Name, newStorage, applyCommand.Render(global))
		}
	}
	// With a conversion webhook, migrate measures what the webhook keeps
	// of the objects stored at each old version by reading them there,
	// and refuses (unknown) while one is not served.
	if lifecycle.UsesWebhook(live) {
		for _, s := range live.Status.StoredVersions {
			if v := lifecycle.FindVersion(live, s); v != nil && !v.Served && !v.Storage && s != newStorage {
				steps = append(steps, cmd("serve", live.Name, s))
			}
		}
	}
	steps = append(steps, cmd("migrate", live.Name))
	if len(applyLoses) > 0 {
		return steps, StopApply, func(global []lifecycle.Flag) string {
			return fmt.Sprintf("apply the release (%s) once its schemas keep the fields that the ERROR findings above name (%s); applied as it is, it loses them, which only you can accept",
				applyCommand.Render(global), strings.Join(applyLoses, ", "))
		}
	}
	return append(steps, applyCommand), "", nil
}
