package edit

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// Result of an edit: the edited copy of the CRD and its preflight. When
// NoOp is true the CRD already is as the edit would make it ("already
// done"); Edited then equals the input.
type Result struct {
	Edited *apiextensionsv1.CustomResourceDefinition
	Checks Checks
	NoOp   bool
	// Summary says in one line what the edit does (or did).
	Summary string
	// NewlyServed are the versions the edit starts serving: once they are
	// in discovery, clients can use them.
	NewlyServed []string
	// NoLongerServed are the versions the edit stops serving: once they
	// are out of discovery, no client that asks discovery afresh uses
	// them (one with cached discovery may, until it refreshes).
	NoLongerServed []string
	// RecordStored are versions the edit restores to spec.versions that
	// objects are still stored at although status.storedVersions no
	// longer lists them (it was trimmed before they were rewritten): after
	// the write they are added to status.storedVersions again, so that
	// migrate rewrites the objects and trims them, and no step removes the
	// versions before (see RecordStoredVersions).
	RecordStored []string
}

// RecordStoredVersions notes in r that objects are stored at version, which
// r.Edited restores to spec.versions and status.storedVersions does not
// list: the write adds it there again (RecordStored). The API server answered
// a list of the objects with "invalid group/version" for version; message
// is that answer.
func (r *Result) RecordStoredVersions(version, message string) {
	r.RecordStored = append(r.RecordStored, version)
	c := r.Checks.add("StoredAt", Warn, "objects are stored at %s, and status.storedVersions %v does not list it (it was trimmed before they were rewritten): the write adds %s to status.storedVersions again, so that migrate rewrites them and no step removes %s before", version, r.Edited.Status.StoredVersions, version, version)
	c.Details = []string{"the API server, listing the objects: " + message}
}

// Refused returns a *lifecycle.RefusalError when a check failed, else nil.
// Its message names the failed checks; their messages are in the preflight
// report, printed before (and in its Details).
func (r *Result) Refused(operation string) *lifecycle.RefusalError {
	if failed := r.Checks.Failed(); len(failed) > 0 {
		return refusal(operation, r.Edited.Name, failed)
	}
	return nil
}

// defaultVersionCheck reports how kubectl's default version changes.
func defaultVersionCheck(cs *Checks, before, after *apiextensionsv1.CustomResourceDefinition) {
	b, a := lifecycle.DefaultVersion(before), lifecycle.DefaultVersion(after)
	if a == b {
		cs.add("DefaultVersion", Pass, "kubectl's default version stays %s", orNone(a))
		return
	}
	cs.add("DefaultVersion", Warn, "kubectl's default version changes from %s to %s: `kubectl get %s` and clients that use the preferred version will read %s", orNone(b), orNone(a), after.Spec.Names.Plural, orNone(a))
}

func orNone(s string) string {
	if s == "" {
		return "(none served)"
	}
	return s
}

// CheckNoneConversionPruning names the check that conversion None prunes no
// field between a version and the others (a prediction from the schemas).
const CheckNoneConversionPruning = "NoneConversionPruning"

// Pruning is what --allow-pruning accepts: every loss (All), or the
// losses at Paths and under them (schema.Under: ".spec.ports" holds
// ".spec.ports[2].x", and "[*]" stands for every index).
type Pruning struct {
	All   bool
	Paths []string
}

// Accepts reports whether p accepts losing path.
func (p Pruning) Accepts(path string) bool { return p.All || schema.Under(p.Paths, path) }

// Flag is p as typed: "--allow-pruning", "--allow-pruning=PATH,…", or ""
// when p accepts nothing.
func (p Pruning) Flag() string {
	switch {
	case p.All:
		return "--allow-pruning"
	case len(p.Paths) > 0:
		return "--allow-pruning=" + strings.Join(p.Paths, ",")
	}
	return ""
}

// noneConversionCheck fails when, under conversion strategy None, the served
// versions of crd have schemas that prune each other's fields. A loss that
// p accepts is a warning that still lists what will be lost; with paths,
// the fields under them are accepted and the rest still fail.
func noneConversionCheck(cs *Checks, crd *apiextensionsv1.CustomResourceDefinition, subject string, p Pruning) *Check {
	if lifecycle.UsesWebhook(crd) || lifecycle.FindVersion(crd, subject) == nil {
		return nil
	}
	brought, alreadyOf := lifecycle.NoneConversionLossesOf(crd, subject)
	already := lifecycle.NoneLossTexts(alreadyOf)
	var lost, accepted []string
	way := Pruning{Paths: slices.Clone(p.Paths)}
	for _, l := range brought {
		if p.Accepts(l.Path) {
			accepted = append(accepted, l.Text)
			continue
		}
		lost = append(lost, l.Text)
		// A path with a wildcard other than an index (".spec.*": fields
		// the schema does not name) is no flag's: the way out names the
		// field that holds them (".spec"); the bare flag only at the root.
		path, ok := flagPath(l.Path)
		way.All = way.All || !ok
		if ok && !slices.Contains(way.Paths, path) {
			way.Paths = append(way.Paths, path)
		}
	}
	if len(brought) == 0 && len(already) > 0 {
		c := cs.add(CheckNoneConversionPruning, Warn, "conversion strategy None: %s prunes %d field(s) against other versions, each just as a version with %s's schema does today, so this changes nothing of it (objects moving between those versions lose them already; Webhook conversion or schemas that agree keep them)", subject, len(already), subject)
		c.Details = already
		return c
	}
	if len(brought) == 0 {
		return cs.add(CheckNoneConversionPruning, Pass, "conversion strategy None: no field is pruned between %s and the other versions", subject)
	}
	if len(lost) == 0 {
		c := cs.add(CheckNoneConversionPruning, Warn, "conversion strategy None: %d field(s) WILL BE LOST when objects move between %s and other versions (%s)", len(accepted), subject, p.Flag())
		c.Details = accepted
		return c
	}
	also := ""
	if len(accepted) > 0 {
		also = fmt.Sprintf(" (%d more accepted by %s)", len(accepted), lifecycle.Quote(p.Flag()))
	}
	slices.Sort(way.Paths)
	c := cs.add(CheckNoneConversionPruning, Fail, "conversion strategy None and the schemas differ, so %d field(s) would be pruned%s (use Webhook conversion, make the schemas agree, or pass %s to accept the loss)", len(lost), also, lifecycle.Quote(way.Flag()))
	c.Details = lost
	return c
}

// flagPath is the path --allow-pruning takes for a schema path: the path
// itself, or for one with a wildcard other than an index (".spec.*",
// ".spec.x.*.y") the field above the wildcard (".spec", ".spec.x"); false
// when that is the root.
func flagPath(path string) (string, bool) {
	for i := 0; i < len(path); i++ {
		if path[i] == '*' && (i == 0 || path[i-1] != '[') {
			parent := strings.TrimSuffix(path[:i], ".")
			return parent, parent != ""
		}
	}
	return path, true
}

// PreserveUnknownSchema is the schema that keeps every field of an object:
// type object with x-kubernetes-preserve-unknown-fields at the root (the
// API server still prunes metadata to ObjectMeta). A version removed from
// spec.versions while objects were stored at it is restored with it, or
// with the schema it had: any narrower one — the storage version's — prunes
// on every read what only the removed version declared, and a rewrite read
// through it erases that for good.
func PreserveUnknownSchema() *apiextensionsv1.CustomResourceValidation {
	keep := true
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}}
}

// restores reports whether spec restores a version that crd's
// spec.versions lacks and objects may be stored at: status.storedVersions
// lists it, or the API server said so (spec.StoredAt).
func restores(crd *apiextensionsv1.CustomResourceDefinition, spec AddVersionSpec) bool {
	return (spec.StoredAt || slices.Contains(crd.Status.StoredVersions, spec.Name)) && lifecycle.FindVersion(crd, spec.Name) == nil
}

// restoreSchemaCheck fails a restore whose schema is copied from another
// version (from): it is not the one the objects were written with, so
// what only the removed version declared is pruned on every read through
// it, and a rewrite that no managedFields entry warns of erases it (B21).
// --allow-pruning makes it a warning.
func restoreSchemaCheck(cs *Checks, spec AddVersionSpec, from string) {
	outcome, how := Fail, "restore it with --preserve-unknown-fields (a schema that keeps every field), or --schema-file with the schema it had; --allow-pruning accepts the copy"
	if spec.Pruning.All {
		outcome, how = Warn, "accepted (--allow-pruning)"
	}
	cs.add("RestoreSchema", outcome, "%s is restored with the schema of %s, not the one its objects were written with: every read through it prunes what only %s declared, and a rewrite erases it for good; %s", spec.Name, orNone(from), spec.Name, how)
}

// restoreCheck stands in for noneConversionCheck when add-version restores
// subject unserved while objects may be stored at it: the write converts
// and prunes no object, and no client writes through an unserved version,
// so what conversion None prunes between its schema and the others' is not
// a loss of this step; migrate measures each object before moving it to
// the storage version and refuses such a loss. A Warn that lists the
// fields.
func restoreCheck(cs *Checks, crd *apiextensionsv1.CustomResourceDefinition, subject string) {
	if lifecycle.UsesWebhook(crd) {
		return
	}
	lost, already := lifecycle.NoneConversionLosses(crd, subject)
	lost = append(lost, already...)
	if len(lost) == 0 {
		cs.add(CheckNoneConversionPruning, Pass, "conversion strategy None: no field is pruned between %s and the other versions", subject)
		return
	}
	c := cs.add(CheckNoneConversionPruning, Warn, "conversion strategy None: %s's schema and the others' prune %d field(s) of each other; restoring %s unserved writes no object and prunes nothing, and migrate measures what moving its objects to %s loses, refusing before any loss", subject, len(lost), subject, orNone(lifecycle.StorageVersion(crd)))
	c.Details = lost
}

// AddVersionSpec is what add-version adds.
type AddVersionSpec struct {
	Name string
	// From is the version whose schema, subresources, printer columns and
	// selectable fields are copied. Empty means the storage version.
	From string
	// Schema, when set, is the new version's schema instead of From's; the
	// subresources, printer columns and selectable fields are still From's,
	// so that controllers writing /status or /scale and kubectl get's
	// columns keep working at the new version.
	Schema *apiextensionsv1.CustomResourceValidation
	Served bool
	// Deprecated and DeprecationWarning set the new version's deprecation.
	Deprecated         bool
	DeprecationWarning *string
	// Conversion, when set, replaces spec.conversion.
	Conversion *apiextensionsv1.CustomResourceConversion
	// Pruning accepts a None conversion between differing schemas: every
	// field they prune (All), or those under Paths. Only All accepts a
	// restore's copied schema (RestoreSchema).
	Pruning Pruning
	// StoredAt says that objects are stored at Name although
	// status.storedVersions does not list it (the API server answered a
	// list of them "invalid group/version" for it): the add restores it.
	StoredAt bool
}

// AddVersion appends a version to spec.versions. It is never the storage
// version; promote-storage does that.
func AddVersion(crd *apiextensionsv1.CustomResourceDefinition, spec AddVersionSpec) *Result {
	out := crd.DeepCopy()
	r := &Result{Edited: out}
	cs := &r.Checks

	if errs := validation.IsDNS1035Label(spec.Name); len(errs) > 0 {
		cs.add("VersionName", Fail, "%q is not a valid version name (a DNS-1035 label): %s", spec.Name, strings.Join(errs, "; "))
	} else if !lifecycle.IsKubeVersion(spec.Name) {
		cs.add("VersionName", Warn, "%q is not in Kubernetes version form (v1, v2beta1, v1alpha3): it sorts below every such version in kubectl's priority", spec.Name)
	} else {
		cs.add("VersionName", Pass, "%s is a valid version name", spec.Name)
	}

	if slices.Contains(lifecycle.RetiredVersions(crd), spec.Name) {
		cs.add("VersionRetired", Warn, "%s was retired from %s (annotation %s): adding it back serves again an API its clients were told to leave; if this undoes a retirement for a rollback, the storage version stays %s until you move it", spec.Name, crd.Name, lifecycle.RetiredVersionsAnnotation, orNone(lifecycle.StorageVersion(crd)))
	}
	from := spec.From
	if from == "" {
		from = lifecycle.StorageVersion(crd)
	}
	var source *apiextensionsv1.CustomResourceDefinitionVersion
	if from != "" {
		source = lifecycle.FindVersion(crd, from)
		if source == nil {
			cs.add("FromVersion", Fail, "--from %s: no such version in spec.versions", from)
		}
	}
	newVersion := apiextensionsv1.CustomResourceDefinitionVersion{Name: spec.Name}
	if source != nil {
		newVersion = *source.DeepCopy()
		newVersion.Name = spec.Name
	}
	newVersion.Served = spec.Served
	newVersion.Storage = false
	newVersion.Deprecated = spec.Deprecated
	newVersion.DeprecationWarning = spec.DeprecationWarning
	if spec.Schema != nil {
		newVersion.Schema = spec.Schema.DeepCopy()
	}

	if spec.DeprecationWarning != nil && *spec.DeprecationWarning == "" {
		cs.add("DeprecationWarning", Fail, "--deprecation-warning must not be empty (the API server rejects an empty deprecationWarning)")
	}
	if sch := schema.Of(&newVersion); (source != nil || spec.Schema != nil) && (sch == nil || sch.Type != "object") {
		cs.add("Schema", Fail, "the new version's schema must be an object schema (openAPIV3Schema with type: object)")
	}
	if existing := lifecycle.FindVersion(crd, spec.Name); existing != nil {
		if existing.Served == newVersion.Served && existing.Deprecated == newVersion.Deprecated &&
			equalPtr(existing.DeprecationWarning, newVersion.DeprecationWarning) && schema.Equal(schema.Of(existing), schema.Of(&newVersion)) {
			r.NoOp = true
			r.Edited = crd.DeepCopy()
			r.Summary = fmt.Sprintf("version %s already exists with this schema (served: %t); nothing to do", spec.Name, existing.Served)
			cs.add("VersionAbsent", Pass, "%s is already in spec.versions", spec.Name)
			return r
		}
		cs.add("VersionAbsent", Fail, "version %s already exists in spec.versions with a different schema, served or deprecated flag; edit it with serve/unserve/deprecate, or choose another name", spec.Name)
		return r
	}
	cs.add("VersionAbsent", Pass, "%s is not in spec.versions yet", spec.Name)

	out.Spec.Versions = append(out.Spec.Versions, newVersion)
	if spec.Conversion != nil {
		before, after := strategyOf(crd), spec.Conversion.Strategy
		out.Spec.Conversion = spec.Conversion.DeepCopy()
		if before != after {
			msg := fmt.Sprintf("the conversion strategy changes from %s to %s", before, after)
			if before == apiextensionsv1.WebhookConverter {
				msg += ": the webhook configuration is removed and the API server only rewrites apiVersion between versions"
			}
			cs.add("ConversionStrategy", Warn, "%s", msg)
		}
	}
	if lifecycle.UsesWebhook(out) {
		webhookConfigCheck(cs, out)
	}
	if paths := schema.DefaultPaths(schema.Of(&newVersion)); crd.Spec.PreserveUnknownFields && len(paths) > 0 {
		c := cs.add("PreserveUnknownFields", Fail, "spec.preserveUnknownFields is true, and the API server rejects schema defaults then (\"must be false in order to use defaults in the schema\"); set it to false first: %s (keeping unknown fields with x-kubernetes-preserve-unknown-fields: true where they must stay)", lifecycle.PreserveUnknownFieldsOff(crd.Name))
		c.Details = paths
	}
	restore := restores(crd, spec)
	if restore && spec.Schema == nil {
		restoreSchemaCheck(cs, spec, from)
	}
	switch {
	case restore && !spec.Served:
		restoreCheck(cs, out, spec.Name)
	case restore:
		if c := noneConversionCheck(cs, out, spec.Name, spec.Pruning); c != nil && c.Outcome == Fail {
			c.Message += fmt.Sprintf("; %s is a restore (objects are stored at it): restore it unserved (--served=false), which writes no object and lets migrate measure them", spec.Name)
		}
	default:
		noneConversionCheck(cs, out, spec.Name, spec.Pruning)
	}
	defaultVersionCheck(cs, crd, out)

	how := "served"
	if !spec.Served {
		how = "not served"
	}
	origin := "the schema of " + from
	switch {
	case spec.Schema != nil && source != nil:
		origin = "the given schema, and the subresources, printer columns and selectable fields of " + from
		if kept := keptFrom(source); kept != "" {
			cs.add("CopiedFrom", Pass, "%s keeps %s of %s", spec.Name, kept, from)
		}
	case spec.Schema != nil:
		origin = "the given schema"
	}
	r.Summary = fmt.Sprintf("add version %s (%s) with %s", spec.Name, how, origin)
	if spec.Served {
		r.NewlyServed = []string{spec.Name}
	}
	return r
}

// keptFrom names what a new version with its own schema keeps of source:
// its subresources and printer columns and selectable fields, "" when
// source has none.
func keptFrom(source *apiextensionsv1.CustomResourceDefinitionVersion) string {
	var kept []string
	if sr := source.Subresources; sr != nil {
		if sr.Status != nil {
			kept = append(kept, "the status subresource")
		}
		if sr.Scale != nil {
			kept = append(kept, "the scale subresource")
		}
	}
	if n := len(source.AdditionalPrinterColumns); n > 0 {
		kept = append(kept, fmt.Sprintf("%d printer column(s)", n))
	}
	if n := len(source.SelectableFields); n > 0 {
		kept = append(kept, fmt.Sprintf("%d selectable field(s)", n))
	}
	return strings.Join(kept, ", ")
}

// webhookConfigCheck checks that Webhook conversion is configured
// completely and allowed (spec.preserveUnknownFields must be false).
func webhookConfigCheck(cs *Checks, crd *apiextensionsv1.CustomResourceDefinition) {
	w := crd.Spec.Conversion.Webhook
	var missing []string
	switch {
	case w == nil || w.ClientConfig == nil:
		missing = append(missing, "a webhook URL or Service (--webhook-url or --webhook-service)")
	case w.ClientConfig.URL == nil && w.ClientConfig.Service == nil:
		missing = append(missing, "a webhook URL or Service (--webhook-url or --webhook-service)")
	}
	if w == nil || len(w.ConversionReviewVersions) == 0 {
		missing = append(missing, "conversionReviewVersions")
	}
	if len(missing) > 0 {
		cs.add("WebhookConfig", Fail, "conversion strategy Webhook needs %s", strings.Join(missing, " and "))
	} else if len(w.ClientConfig.CABundle) == 0 {
		cs.add("WebhookConfig", Warn, "the conversion webhook has no caBundle: the API server will verify its certificate against the system trust roots")
	} else {
		cs.add("WebhookConfig", Pass, "the conversion webhook configuration is complete")
	}
	if crd.Spec.PreserveUnknownFields {
		cs.add("PreserveUnknownFields", Fail, "spec.preserveUnknownFields is true, and the API server rejects Webhook conversion then (\"must be None if spec.preserveUnknownFields is true\"); set it to false first: %s (keeping unknown fields with x-kubernetes-preserve-unknown-fields: true where they must stay)", lifecycle.PreserveUnknownFieldsOff(crd.Name))
	}
}

// PromoteStorage makes version the one storage version. Checks on objects
// (readable and valid at version) are the command's. versionOrder is the
// order of versions the user gave, oldest first (--version-order, may be
// nil): the check that version is newer than the storage version uses it
// (see lifecycle.Order).
func PromoteStorage(crd *apiextensionsv1.CustomResourceDefinition, version string, pruning Pruning, versionOrder []string) *Result {
	out := crd.DeepCopy()
	r := &Result{Edited: out}
	cs := &r.Checks
	v := lifecycle.FindVersion(out, version)
	switch {
	case v == nil:
		cs.add("VersionExists", Fail, "version %s is not in spec.versions; add it first: kubectl crdversion add-version %s %s", version, crd.Name, version).Run =
			[]lifecycle.Command{lifecycle.Crdversion("add-version", crd.Name, version)}
		return r
	case !v.Served:
		cs.add("VersionServed", Fail, "version %s is not served: objects could not be read or written through it; serve it first: kubectl crdversion serve %s %s", version, crd.Name, version).Run =
			[]lifecycle.Command{lifecycle.Crdversion("serve", crd.Name, version)}
		return r
	case v.Storage && len(lifecycle.StorageVersions(crd)) == 1:
		r.NoOp = true
		r.Summary = fmt.Sprintf("%s is already the storage version; nothing to do", version)
		cs.add("VersionServed", Pass, "%s exists and is served", version)
		return r
	}
	cs.add("VersionServed", Pass, "%s exists and is served", version)
	current := lifecycle.StorageVersion(crd)
	old := current
	if storage := lifecycle.StorageVersions(crd); len(storage) != 1 {
		// Only a manifest can be in this state: the API server rejects it.
		old = "none"
		if len(storage) > 1 {
			old = strings.Join(storage, " and ")
		}
		cs.add("StorageVersionCount", Warn, "%s storage: true (the API server rejects that: \"must have exactly one version marked as storage version\"); this edit leaves %s the only one", map[bool]string{true: "no version has", false: old + " have"}[len(storage) == 0], version)
	}
	for i := range out.Spec.Versions {
		out.Spec.Versions[i].Storage = out.Spec.Versions[i].Name == version
	}
	if v.Deprecated {
		cs.add("NotDeprecated", Warn, "%s is deprecated: objects will be stored at a version clients are told to leave", version)
	}
	if cv := lifecycle.FindVersion(crd, current); cv != nil {
		for _, d := range lifecycle.PartDiffs(cv, v) {
			if d.Severity == lifecycle.SeverityWarning {
				cs.add("Subresources", Warn, "%s (storage version %s); controllers that write /status or scale it at %s fail once they move to it", d.Message, current, version)
			}
		}
	}
	if current != "" {
		// A move back is a rollback (sometimes the repair), never the
		// lifecycle's next step: say so rather than pass in silence.
		switch c, basis := lifecycle.OrderOf(crd, versionOrder).Compare(version, current); {
		case basis == lifecycle.OrderUnknown:
			cs.add("VersionOrder", Warn, "nothing says whether %s is newer than the storage version %s (names outside Kubernetes version form that status.storedVersions does not order): make sure %s is the newer API, or this moves the lifecycle backwards", version, current, version)
		case c < 0:
			cs.add("VersionOrder", Warn, "%s is older than the storage version %s (by %s): this moves the storage version back, a rollback, not the lifecycle's next step", version, current, orderBasis(basis))
		}
	}
	noneConversionCheck(cs, out, version, pruning)
	if current != "" && !slices.Contains(crd.Status.StoredVersions, current) {
		cs.add("StoredVersions", Warn, "status.storedVersions %v does not list the current storage version %s", crd.Status.StoredVersions, current)
	}
	r.Summary = fmt.Sprintf("make %s the storage version (was %s); storedVersions becomes [%s]", version, orNone(old), strings.Join(appendUnique(crd.Status.StoredVersions, version), ", "))
	return r
}

func orderBasis(b lifecycle.OrderBasis) string {
	switch b {
	case lifecycle.OrderStoredVersions:
		return "the order of status.storedVersions"
	case lifecycle.OrderGiven:
		return "--version-order"
	}
	return "Kubernetes' version rules"
}

// Deprecate sets or, with undo, clears deprecated and deprecationWarning.
// A nil warning keeps the API server's default text.
func Deprecate(crd *apiextensionsv1.CustomResourceDefinition, version string, warning *string, undo bool) *Result {
	r, v := editVersion(crd, version)
	if v == nil {
		return r
	}
	cs := &r.Checks
	if undo {
		if !v.Deprecated && v.DeprecationWarning == nil {
			r.NoOp = true
			r.Summary = fmt.Sprintf("%s is not deprecated; nothing to do", version)
			return r
		}
		v.Deprecated, v.DeprecationWarning = false, nil
		r.Summary = fmt.Sprintf("mark %s as no longer deprecated", version)
		return r
	}
	if warning != nil && *warning == "" {
		cs.add("DeprecationWarning", Fail, "--warning must not be empty (the API server rejects an empty deprecationWarning); omit it for the API server's default text")
		return r
	}
	if v.Deprecated && equalPtr(v.DeprecationWarning, warning) {
		r.NoOp = true
		r.Summary = fmt.Sprintf("%s is already deprecated; nothing to do", version)
		return r
	}
	if v.Storage {
		cs.add("NotStorage", Warn, "%s is the storage version: promote another version before clients are told to leave this one", version)
	}
	if others := servedOthers(crd, version); len(others) == 0 {
		cs.add("Replacement", Warn, "%s is the only served version: every client, the controllers that own this resource included, gets the warning on every request with nowhere to move; add and serve its replacement first", version)
	}
	if api := lifecycle.GroupVersion(crd, version); warning != nil && (!strings.Contains(*warning, api) || !strings.Contains(*warning, crd.Spec.Names.Kind)) {
		cs.add("WarningText", Warn, "the warning does not name the API it is about (%s %s): clients log it without saying which resource to move; omit --warning for the API server's default (\"%s %s is deprecated; use …\"), or name it", api, crd.Spec.Names.Kind, api, crd.Spec.Names.Kind)
	}
	if lifecycle.DefaultVersion(crd) == version {
		cs.add("NotDefault", Warn, "%s is kubectl's default version: `kubectl get %s` will print the deprecation warning", version, crd.Spec.Names.Plural)
	}
	v.Deprecated, v.DeprecationWarning = true, warning
	text := "the API server's default warning"
	if warning != nil {
		text = fmt.Sprintf("the warning %q", *warning)
	}
	r.Summary = fmt.Sprintf("mark %s deprecated; clients using it get %s", version, text)
	return r
}

// SetServed serves or unserves a version. It refuses to unserve the storage
// version or the last served version. (The check that clients have stopped
// using the version belongs to the command, with access to the metrics.)
func SetServed(crd *apiextensionsv1.CustomResourceDefinition, version string, served bool) *Result {
	r, v := editVersion(crd, version)
	if v == nil {
		return r
	}
	cs := &r.Checks
	if v.Served == served {
		r.NoOp = true
		r.Summary = fmt.Sprintf("%s is already %s; nothing to do", version, servedWord(served))
		return r
	}
	if !served {
		if v.Storage {
			cs.add("NotStorage", Fail, "%s is the storage version: promote another version first (kubectl crdversion promote-storage %s <version>)", version, crd.Name).Run =
				[]lifecycle.Command{lifecycle.Crdversion("promote-storage", crd.Name, lifecycle.PlaceholderVersion)}
		} else {
			cs.add("NotStorage", Pass, "%s is not the storage version", version)
		}
		others := len(servedOthers(crd, version))
		if others == 0 {
			cs.add("AnotherServed", Fail, "%s is the last served version: the resource would disappear from the API", version)
		} else {
			cs.add("AnotherServed", Pass, "%d other version(s) stay served", others)
		}
		if !v.Storage && slices.Contains(crd.Status.StoredVersions, version) {
			if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
				// migrate measures what the webhook keeps by reading the
				// objects at the version they are stored at: unserved, it
				// refuses and the next step would be to serve it again.
				cs.add("NotStored", Fail, "%s is still in status.storedVersions and conversion is Webhook: migrate reads the objects stored at %s to measure what the webhook keeps, so run it while %s is served, then unserve (kubectl crdversion migrate %s)",
					version, version, version, crd.Name).Run = []lifecycle.Command{lifecycle.Crdversion("migrate", crd.Name)}
			} else {
				cs.add("NotStored", Warn, "%s is still in status.storedVersions: objects stored at it stay readable through other versions, but run migrate before removing it", version)
			}
		}
		// A deprecation warning that sends clients here sends them to a
		// version that is going away.
		gv := lifecycle.GroupVersion(crd, version)
		for _, o := range crd.Spec.Versions {
			if o.Name != version && o.Served && o.Deprecated && o.DeprecationWarning != nil && mentionsVersion(*o.DeprecationWarning, gv) {
				cs.add("DeprecationWarnings", Warn, "the deprecationWarning of %s tells clients to move to %s, which this stops serving (%q); point it at a version that stays served (kubectl crdversion deprecate %s %s --warning TEXT)",
					o.Name, gv, *o.DeprecationWarning, crd.Name, o.Name)
			}
		}
	}
	v.Served = served
	if served {
		r.NewlyServed = []string{version}
	} else {
		r.NoLongerServed = []string{version}
	}
	defaultVersionCheck(cs, crd, r.Edited)
	r.Summary = fmt.Sprintf("%s %s", map[bool]string{true: "serve", false: "stop serving"}[served], version)
	return r
}

// mentionsVersion reports whether text names the group/version gv as a
// whole: "example.com/v1" in "use example.com/v1 CronTab", not in
// "example.com/v1beta1".
func mentionsVersion(text, gv string) bool {
	for i := strings.Index(text, gv); i >= 0; {
		end := i + len(gv)
		if end == len(text) || !unicode.IsLetter(rune(text[end])) && !unicode.IsDigit(rune(text[end])) {
			return true
		}
		next := strings.Index(text[end:], gv)
		if next < 0 {
			return false
		}
		i = end + next
	}
	return false
}

// editVersion starts an edit of one existing version: a copy of crd and
// the version in it, or a nil version and a failed VersionExists check.
func editVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Result, *apiextensionsv1.CustomResourceDefinitionVersion) {
	r := &Result{Edited: crd.DeepCopy()}
	v := lifecycle.FindVersion(r.Edited, version)
	if v == nil {
		r.Checks.add("VersionExists", Fail, "version %s is not in spec.versions", version)
		return r, nil
	}
	r.Checks.add("VersionExists", Pass, "%s is in spec.versions", version)
	return r, v
}

// servedOthers are the served versions of crd other than version.
func servedOthers(crd *apiextensionsv1.CustomResourceDefinition, version string) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != version {
			out = append(out, v.Name)
		}
	}
	return out
}

func strategyOf(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.ConversionStrategyType {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy == "" {
		return apiextensionsv1.NoneConverter
	}
	return crd.Spec.Conversion.Strategy
}

func servedWord(served bool) string {
	if served {
		return "served"
	}
	return "not served"
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func appendUnique(list []string, s string) []string {
	out := append([]string(nil), list...)
	if !slices.Contains(out, s) {
		out = append(out, s)
	}
	return out
}
