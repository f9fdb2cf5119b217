package lifecycle

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// findings lists what is wrong with, or worth knowing about, the CRD, most
// severe first within each kind of check.
func findings(crd *apiextensionsv1.CustomResourceDefinition, a Analysis) []Finding {
	name := crd.Name
	out := []Finding{}
	add := func(f Finding) { out = append(out, f) }

	if storage := StorageVersions(crd); len(storage) != 1 {
		msg := "no version has storage: true; exactly one must (the API server rejects the CRD: \"must have exactly one version marked as storage version\")"
		if len(storage) > 1 {
			msg = fmt.Sprintf("%d versions have storage: true (%s); exactly one must (the API server rejects the CRD: \"must have exactly one version marked as storage version\")", len(storage), strings.Join(storage, ", "))
		}
		add(Finding{
			Code: CodeStorageVersionCount, Severity: SeverityError, Message: msg,
			Fix: "set storage: true on exactly one version in spec.versions (kubectl crdversion promote-storage -f FILE CRD VERSION does it in a manifest)",
		})
	}

	for _, f := range breakGlass(crd) {
		add(f)
	}
	for _, s := range crd.Status.StoredVersions {
		if FindVersion(crd, s) != nil {
			continue
		}
		add(Finding{
			Code: CodeStoredVersionNotInSpec, Severity: SeverityError, Version: s,
			Message: fmt.Sprintf("status.storedVersions lists %s but spec.versions does not: objects still stored at %s cannot be read, listed or deleted, and every update of this CRD is rejected; restore %s unserved, then run migrate", s, s, s),
		}.WithRun(RestoreUnserved(name, s)))
	}
	if a.StorageVersion != "" && len(crd.Status.StoredVersions) > 0 && !slices.Contains(crd.Status.StoredVersions, a.StorageVersion) {
		add(Finding{
			Code: CodeStorageVersionNotStored, Severity: SeverityWarning, Version: a.StorageVersion,
			Message: fmt.Sprintf("status.storedVersions [%s] lacks the storage version %s (a hand edit of the status subresource, which the API server accepts): objects stored at %s are not accounted for, and a later storage change could let %s leave spec.versions while objects are stored at it",
				strings.Join(crd.Status.StoredVersions, ", "), a.StorageVersion, a.StorageVersion, a.StorageVersion),
		}.WithRun(migrateFix(a)...))
	}
	for _, s := range crd.Status.StoredVersions {
		if s == a.StorageVersion || FindVersion(crd, s) == nil || a.StorageVersion == "" {
			continue
		}
		add(Finding{
			Code: CodeMigrationPending, Severity: SeverityWarning, Version: s,
			Message: fmt.Sprintf("status.storedVersions still lists %s: objects may be stored at %s until every object is rewritten at %s; %s cannot be removed from spec.versions before that", s, s, a.StorageVersion, s) + withLoss(a),
		}.WithRun(migrateFix(a)...))
	}

	served := 0
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served++
		}
		if v.Served && v.Deprecated {
			add(deprecatedServed(crd, a, v.Name))
		}
		if v.Storage && !v.Served && otherServed(crd, v.Name) {
			add(Finding{
				Code: CodeStorageVersionNotServed, Severity: SeverityInfo, Version: v.Name,
				Message: fmt.Sprintf("the storage version %s is not served; objects are read and written through other versions only", v.Name),
			})
		}
	}
	if served == 0 && len(crd.Spec.Versions) > 0 {
		add(Finding{
			Code: CodeNoServedVersion, Severity: SeverityWarning,
			Message: "no version is served: the API server offers no endpoint for this resource, and its objects cannot be listed or counted",
		}.WithRun(Crdversion("serve", name, cmp.Or(a.StorageVersion, PlaceholderVersion))))
	}
	if a.StorageVersion != "" && a.State != StateS1 {
		for _, v := range crd.Spec.Versions {
			if v.Served && HigherPriority(v.Name, a.StorageVersion) && a.order.Newer(v.Name, a.StorageVersion) {
				add(Finding{
					Code: CodeStorageNotHighestVersion, Severity: SeverityInfo, Version: v.Name,
					Message: fmt.Sprintf("%s has higher priority than the storage version %s", v.Name, a.StorageVersion),
				})
			}
		}
	}

	out = append(out, orderFindings(crd, a, a.order)...)
	out = append(out, partFindings(crd, a)...)
	out = append(out, retirable(crd, a)...)
	out = append(out, migrationPruning(crd, a)...)
	out = append(out, conditionFindings(crd)...)
	out = append(out, conversionFindings(crd, a)...)

	if crd.Spec.PreserveUnknownFields {
		add(Finding{
			Code: CodePreserveUnknownFields, Severity: SeverityWarning,
			Message: "spec.preserveUnknownFields is true (a CRD created through apiextensions.k8s.io/v1beta1): unknown fields are stored instead of pruned, and the API server rejects schema defaults and Webhook conversion until it is false; a v1 manifest that omits the field leaves it true; once it is false, fields of existing objects that no schema describes are pruned: add x-kubernetes-preserve-unknown-fields: true where they must be kept, first",
		}.WithRun(PreserveUnknownFieldsOff(name)))
	}
	return out
}

// deprecatedServed is the finding for the deprecated, served version v,
// with the step that is safe in its place: unserving it only when it is
// neither the storage version nor still listed in status.storedVersions
// (objects may be stored at it), and known to be older than the storage
// version (see Order); otherwise undoing a deprecated storage
// version, or migrating first.
func deprecatedServed(crd *apiextensionsv1.CustomResourceDefinition, a Analysis, v string) Finding {
	name := crd.Name
	switch {
	case v == a.StorageVersion:
		return Finding{
			Code: CodeDeprecatedServed, Severity: SeverityWarning, Version: v,
			Message: fmt.Sprintf("the storage version %s is deprecated: clients are told to leave the version every object is written at, and it cannot be unserved while it is the storage version; undo the deprecation, or make a newer version the storage version first", v),
		}.WithRun(Crdversion("deprecate", name, v).With("undo", ""))
	case slices.Contains(crd.Status.StoredVersions, v):
		return Finding{
			Code: CodeDeprecatedServed, Severity: SeverityInfo, Version: v,
			Message: fmt.Sprintf("%s is deprecated and still served, and status.storedVersions still lists it (objects may be stored at it): rewrite them at the storage version %s first; unserve %s only after that, once no client requests it", v, a.StorageVersion, v),
		}.WithRun(migrateFix(a)...)
	case slices.Contains(a.UnorderedVersions, v):
		// Unserving it is the lifecycle's step only if it is the older
		// API, which nothing says.
		return Finding{
			Code: CodeDeprecatedServed, Severity: SeverityInfo, Version: v,
			Message: fmt.Sprintf("%s is deprecated and still served; clients using it get a warning; nothing says whether it is older than the storage version %s, so unserving it is not advised", v, a.StorageVersion),
			Fix:     AskOrder(a.StorageVersion, a.UnorderedVersions),
		}
	}
	return Finding{
		Code: CodeDeprecatedServed, Severity: SeverityInfo, Version: v,
		Message: fmt.Sprintf("%s is deprecated and still served; clients using it get a warning; unserve it once no client requests it", v),
	}.WithRun(Crdversion("unserve", name, v))
}

// PreserveUnknownFieldsOff is the kubectl command that sets
// spec.preserveUnknownFields to false on the CRD name. A manifest applied
// without the field leaves a live true in place, so it must be set
// explicitly.
func PreserveUnknownFieldsOff(name string) Command {
	return Kubectl("patch", "crd", name).With("type", "merge").With("p", `{"spec":{"preserveUnknownFields":false}}`)
}

// RestoreUnserved is the command that puts version, still listed in
// status.storedVersions, back into spec.versions unserved, with a schema
// that keeps every field (x-kubernetes-preserve-unknown-fields), so that
// objects stored at it can be read again and nothing only it declared is
// pruned (B21: the storage version's schema pruned it on every read, and
// migrate then erased it). Its subresources and printer columns are the
// storage version's (add-version's default --from).
func RestoreUnserved(name, version string) Command {
	return Crdversion("add-version", name, version).With("preserve-unknown-fields", "").With("served", "false")
}

// Condition findings: what the API server's own controllers report in
// status.conditions.
const (
	CodeNotEstablished      = "NotEstablished"
	CodeNamesNotAccepted    = "NamesNotAccepted"
	CodeNonStructuralSchema = "NonStructuralSchema"
	CodeTerminating         = "Terminating"
)

func conditionFindings(crd *apiextensionsv1.CustomResourceDefinition) []Finding {
	var out []Finding
	if crd.DeletionTimestamp != nil {
		out = append(out, Finding{
			Code: CodeTerminating, Severity: SeverityError,
			Message: fmt.Sprintf("the CRD is being deleted (since %s, finalizers %v): its objects are being removed", crd.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"), crd.Finalizers),
			Fix:     "wait for the deletion to finish; no version step applies to a CRD being deleted",
		})
	}
	for _, c := range crd.Status.Conditions {
		detail := c.Reason
		if c.Message != "" {
			detail += ": " + c.Message
		}
		switch {
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionFalse && c.Reason != "Installing":
			out = append(out, Finding{
				Code: CodeNotEstablished, Severity: SeverityError,
				Message: "the API server does not serve this CRD (Established=False, " + detail + ")",
				Fix:     establishedFix(c.Reason),
			})
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			out = append(out, Finding{
				Code: CodeNamesNotAccepted, Severity: SeverityError,
				Message: "the CRD's names conflict with another resource (NamesAccepted=False, " + detail + ")",
				Fix:     "change the conflicting names in spec.names (plural, singular, shortNames, kind, listKind) so that no other resource of the group uses them",
			})
		case c.Type == apiextensionsv1.NonStructuralSchema && c.Status == apiextensionsv1.ConditionTrue:
			out = append(out, Finding{
				Code: CodeNonStructuralSchema, Severity: SeverityWarning,
				Message: "a version's schema is not structural (" + detail + "): pruning and defaulting do not work as expected",
			})
		case c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue && crd.DeletionTimestamp == nil:
			out = append(out, Finding{
				Code: CodeTerminating, Severity: SeverityWarning,
				Message: "the CRD is being deleted (" + detail + ")",
			})
		}
	}
	return out
}

func establishedFix(reason string) string {
	if reason == "InvalidCABundle" {
		return "set spec.conversion.webhook.clientConfig.caBundle to the PEM CA bundle that signed the webhook's serving certificate (often injected by cert-manager's cainjector)"
	}
	return ""
}

func conversionFindings(crd *apiextensionsv1.CustomResourceDefinition, a Analysis) []Finding {
	var out []Finding
	switch a.Conversion.Strategy {
	case string(apiextensionsv1.NoneConverter):
		storage := FindVersion(crd, a.StorageVersion)
		if storage == nil {
			return nil
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == storage.Name || !v.Served || schema.Equal(schema.Of(&v), schema.Of(storage)) {
				continue
			}
			toV := schema.PrunedFields(schema.Of(storage), schema.Of(&v))
			toStorage := schema.PrunedFields(schema.Of(&v), schema.Of(storage))
			f := Finding{Severity: SeverityWarning, Version: v.Name,
				Fix: fmt.Sprintf("use Webhook conversion, or make the schemas of %s and %s identical", v.Name, storage.Name)}
			if len(toV)+len(toStorage) == 0 {
				f.Code = CodeNoneConversionSchemas
				f.Severity = SeverityInfo
				f.Message = fmt.Sprintf("conversion strategy None, and the schemas of %s and the storage version %s differ (no field is pruned, but validation or defaults differ)", v.Name, storage.Name)
			} else {
				f.Code = CodeNoneConversionPrunes
				var parts []string
				if len(toV) > 0 {
					parts = append(parts, fmt.Sprintf("reading at %s drops %s", v.Name, strings.Join(toV, ", ")))
				}
				if len(toStorage) > 0 {
					parts = append(parts, fmt.Sprintf("writing at %s drops %s", v.Name, strings.Join(toStorage, ", ")))
				}
				f.Message = fmt.Sprintf("conversion strategy None between %s and the storage version %s, whose schemas differ: %s", v.Name, storage.Name, strings.Join(parts, "; "))
			}
			out = append(out, f)
		}
	case string(apiextensionsv1.WebhookConverter):
		w := a.Conversion.Webhook
		var missing []string
		switch w {
		case nil:
			missing = append(missing, "spec.conversion.webhook")
		default:
			if w.URL == "" && w.Service == "" {
				missing = append(missing, "spec.conversion.webhook.clientConfig (url or service)")
			}
			if len(w.ConversionReviewVersions) == 0 {
				missing = append(missing, "spec.conversion.webhook.conversionReviewVersions")
			}
		}
		if len(missing) > 0 {
			out = append(out, Finding{
				Code: CodeWebhookConfigIncomplete, Severity: SeverityError,
				Message: "conversion strategy Webhook without " + strings.Join(missing, " and ") + ": the API server cannot convert between versions",
				Fix:     "complete spec.conversion.webhook, or use strategy None when all versions share one schema",
			})
		} else if !w.CABundle {
			out = append(out, Finding{
				Code: CodeWebhookNoCABundle, Severity: SeverityInfo,
				Message: "the conversion webhook has no caBundle: the API server verifies its certificate against the system trust roots",
			})
		}
	}
	return out
}

// migrateFix is migrate, or serving the storage version first when it is
// not served (migrate writes through it). When the schemas predict that
// the migration drops fields (MigrationLosses) there is no command to
// print: migrate refuses once an object holds them, and advice never
// carries --allow-pruning; the finding says why instead (withLoss).
func migrateFix(a Analysis) []Command {
	if len(a.migrateLoss) > 0 {
		return nil
	}
	var out []Command
	if !a.versionServed(a.StorageVersion) {
		out = append(out, Crdversion("serve", a.CRD.Name, a.StorageVersion))
	}
	// With a conversion webhook, migrate reads the objects at each stored
	// version to measure what the webhook's conversion keeps, and refuses
	// (unknown) while one of them is not served.
	for _, v := range a.unservedStored() {
		out = append(out, Crdversion("serve", a.CRD.Name, v))
	}
	return append(out, Crdversion("migrate", a.CRD.Name))
}

// unservedStored are, with Webhook conversion, the versions of
// status.storedVersions other than the storage version that are in
// spec.versions and not served.
func (a Analysis) unservedStored() []string {
	if a.Conversion.Strategy != string(apiextensionsv1.WebhookConverter) {
		return nil
	}
	var out []string
	for _, v := range a.Versions {
		if v.InSpec && v.InStoredVersions && !v.Served && v.Name != a.StorageVersion {
			out = append(out, v.Name)
		}
	}
	return out
}

// withLoss is what MigrationPending adds when the schemas predict that the
// migration drops fields: "" when they predict none.
func withLoss(a Analysis) string {
	if len(a.migrateLoss) == 0 {
		return ""
	}
	return "; kubectl crdversion migrate " + a.CRD.Name + " refuses once an object holds the fields that the finding on pruning names: keep them first, or accept losing them with migrate --allow-pruning"
}

// migrateLossText says what migrate --allow-pruning accepts losing, and
// that migrate refuses without it; "" when the schemas predict no loss.
func migrateLossText(a Analysis) string {
	if len(a.migrateLoss) == 0 {
		return ""
	}
	var parts []string
	for _, l := range a.migrateLoss {
		parts = append(parts, l.Describe(a.StorageVersion))
	}
	return fmt.Sprintf("conversion strategy None: %s; migrate refuses once an object holds these fields (read, or recorded in its managedFields); to keep them, make the schemas describe them or use Webhook conversion first; only migrate --allow-pruning=PATHS with the paths its refusal names, given by you, ACCEPTS LOSING DATA",
		strings.Join(parts, "; "))
}

// promoteLossText says what promote-storage --allow-pruning accepts
// losing when a.NewVersion becomes the storage version, and that
// promote-storage refuses without it; "" when no field is pruned.
func promoteLossText(a Analysis) string {
	if len(a.promoteLoss) == 0 {
		return ""
	}
	return fmt.Sprintf("conversion strategy None prunes %d field(s) between %s and the other versions (%s): promote-storage refuses; to keep them, make the schemas agree or use Webhook conversion first; only promote-storage --allow-pruning=PATHS with the paths its refusal names, given by you, ACCEPTS LOSING DATA",
		len(a.promoteLoss), a.NewVersion, strings.Join(a.promoteLoss, "; "))
}

// Codes of findings about the objects.
const (
	// CodeObjectsUnreadable reports that the API server could not read
	// the CRD's objects.
	CodeObjectsUnreadable = "ObjectsUnreadable"
	// CodeObjectsNotCounted reports that this user may not list them.
	CodeObjectsNotCounted = "ObjectsNotCounted"
	// CodeMigrationPrunes reports that rewriting objects stored at an old
	// version at the storage version drops fields (conversion None).
	CodeMigrationPrunes = "MigrationPrunesFields"
)

// migrationPruning finds, under conversion strategy None, the fields that
// objects stored at an old version (still in storedVersions) lose for good
// when migrate rewrites them at the storage version.
func migrationPruning(crd *apiextensionsv1.CustomResourceDefinition, a Analysis) []Finding {
	if a.Conversion.Strategy != string(apiextensionsv1.NoneConverter) {
		return nil
	}
	var out []Finding
	for _, f := range MigrationLosses(crd) {
		finding := Finding{Code: CodeMigrationPrunes, Severity: SeverityWarning, Version: f.Version,
			Message: "conversion strategy None: " + f.Describe(a.StorageVersion) + "; migrate looks for these fields on every object (read, and recorded in its managedFields) and refuses if one holds them"}
		switch {
		case f.AnyField:
			// Only the measurement can tell: migrate is the step, and
			// it refuses before a loss.
			finding.Message = "conversion strategy None: " + f.Describe(a.StorageVersion) + fmt.Sprintf("; migrate measures every object (read, and recorded in its managedFields) and refuses if one holds a field that %s does not declare: to keep such fields, add them to %s's schema, or use Webhook conversion, first", a.StorageVersion, a.StorageVersion)
			finding = finding.WithRun(Crdversion("migrate", crd.Name))
		case len(f.Fields) > 0 && len(f.Undescribed) > 0:
			finding.Fix = fmt.Sprintf("to keep them, add %s to %s's schema and %s to %s's, or use Webhook conversion, first", strings.Join(f.Fields, ", "), a.StorageVersion, strings.Join(f.Undescribed, ", "), f.Version)
		case len(f.Fields) > 0:
			finding.Fix = fmt.Sprintf("to keep them, add them to %s's schema, or use Webhook conversion, first", a.StorageVersion)
		default:
			finding.Fix = fmt.Sprintf("if an object holds them, %s's schema lost them after it was written: add them back to %s's schema first, so that the data can be read and kept", f.Version, f.Version)
		}
		out = append(out, finding)
	}
	return out
}

// PromotionPending returns the version that should become the storage
// version before a migration is worth running: in state S1 (a newer version
// is served but the old one is still storage) with nothing but the storage
// version in status.storedVersions, a migration rewrites every object at the
// old version and can trim nothing — the "completed but useless" migration
// run before the storage flip. It returns "" otherwise.
func PromotionPending(crd *apiextensionsv1.CustomResourceDefinition, o Options) string {
	a := AnalyzeWith(crd, o)
	if a.State != StateS1 {
		return ""
	}
	for _, s := range crd.Status.StoredVersions {
		if s != a.StorageVersion {
			return ""
		}
	}
	return a.NewVersion
}

// Loss is what migrating objects stored at Version drops.
type Loss struct {
	Version string
	// Fields are declared by Version's schema and pruned by the storage
	// version's: the rewrite drops them.
	Fields []string
	// Undescribed are declared by the storage version's schema but not by
	// Version's, which prunes them when objects stored at Version are read.
	// If Version's schema was shrunk after objects were stored at it (case
	// 18: a release slimming an old version's schema), their data is
	// unreadable already, and the rewrite makes the loss permanent; if the
	// storage version merely added them, nothing is lost.
	Undescribed []string
	// AnyField says that Version's schema keeps fields of any name at its
	// root (x-kubernetes-preserve-unknown-fields, as a restored version
	// has): Fields are then the storage version's pruning of whatever such
	// objects hold, which the schemas cannot tell. Only the measurement of
	// the objects says whether one holds a field that is lost, so this
	// loss does not hold the advice back from migrate, which measures.
	AnyField bool `json:"anyField,omitempty"`
}

// Describe says in one sentence what rewriting the objects stored at
// l.Version at the storage version loses.
func (l Loss) Describe(storage string) string {
	var parts []string
	switch {
	case l.AnyField:
		parts = append(parts, fmt.Sprintf("objects stored at %s may hold fields of any name (its schema keeps unknown fields), and those the storage version %s does not declare are lost when they are rewritten at %s (reads through %s already drop them)", l.Version, storage, storage, storage))
	case len(l.Fields) > 0:
		parts = append(parts, fmt.Sprintf("objects stored at %s lose %s when rewritten at the storage version %s (reads through %s already drop them)", l.Version, strings.Join(l.Fields, ", "), storage, storage))
	}
	if len(l.Undescribed) > 0 {
		parts = append(parts, fmt.Sprintf("%s's schema does not describe %s, which %s's does: objects stored at %s are read without them, so if %s's schema was shrunk after they were written, the rewrite makes that loss permanent", l.Version, strings.Join(l.Undescribed, ", "), storage, l.Version, l.Version))
	}
	return strings.Join(parts, "; ")
}

// MigrationLosses lists, for conversion strategy None, each old version in
// status.storedVersions whose schema and the storage version's prune each
// other's fields. It is empty for Webhook conversion (the webhook decides).
func MigrationLosses(crd *apiextensionsv1.CustomResourceDefinition) []Loss {
	if UsesWebhook(crd) {
		return nil
	}
	storage := FindVersion(crd, StorageVersion(crd))
	if storage == nil {
		return nil
	}
	var out []Loss
	for _, s := range crd.Status.StoredVersions {
		old := FindVersion(crd, s)
		if old == nil || old.Name == storage.Name {
			continue
		}
		l := Loss{Version: s, Fields: schema.PrunedFields(schema.Of(old), schema.Of(storage)), Undescribed: schema.PrunedFields(schema.Of(storage), schema.Of(old))}
		if sch := schema.Of(old); sch != nil && sch.XPreserveUnknownFields != nil && *sch.XPreserveUnknownFields {
			l.AnyField = len(l.Fields) > 0
		}
		if len(l.Fields)+len(l.Undescribed) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// NoneConversionLoss lists, for conversion strategy None, the fields
// pruned when objects move between subject and each other served or
// storage version of crd, as "PATH at VERSION (read or written through
// OTHER)", that subject brings: a version whose pruning against subject
// already holds against a twin of subject — another served or storage
// version with the same schema — is left out (NoneConversionLosses says
// which). nil for Webhook conversion or when subject is not in
// spec.versions. promote-storage and add-version refuse such a loss unless
// --allow-pruning accepts it.
func NoneConversionLoss(crd *apiextensionsv1.CustomResourceDefinition, subject string) []string {
	brought, _ := NoneConversionLosses(crd, subject)
	return brought
}

// NoneConversionLosses is NoneConversionLoss split in two: brought, the
// fields pruned between subject and versions that no twin of subject
// (another served or storage version with subject's schema) already prunes
// them against, and already, those pruned just as much between a twin and
// the other version today, each named "… as between TWIN and OTHER
// already". Adding a copy of a version, or making its twin the storage
// version, changes nothing of the second kind: clients reading or writing
// through the twin meet it now.
func NoneConversionLosses(crd *apiextensionsv1.CustomResourceDefinition, subject string) (brought, already []string) {
	b, a := NoneConversionLossesOf(crd, subject)
	return NoneLossTexts(b), NoneLossTexts(a)
}

// NoneLoss is one field that conversion None prunes between two versions:
// Path is the schema path (schema.PrunedFields: ".spec.color",
// ".spec.ports[*].name", ".spec.*"), Text names it as NoneConversionLosses
// does.
type NoneLoss struct {
	Path, Text string
}

// NoneLossTexts is the Text of each of ls.
func NoneLossTexts(ls []NoneLoss) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Text)
	}
	return out
}

// NoneConversionLossesOf is NoneConversionLosses with the schema path of
// each field.
func NoneConversionLossesOf(crd *apiextensionsv1.CustomResourceDefinition, subject string) (brought, already []NoneLoss) {
	if UsesWebhook(crd) {
		return nil, nil
	}
	v := FindVersion(crd, subject)
	if v == nil {
		return nil, nil
	}
	usable := func(o *apiextensionsv1.CustomResourceDefinitionVersion) bool { return o.Served || o.Storage }
	for _, other := range crd.Spec.Versions {
		if other.Name == subject || !usable(&other) {
			continue
		}
		twin := ""
		for i := range crd.Spec.Versions {
			t := &crd.Spec.Versions[i]
			if t.Name != subject && t.Name != other.Name && usable(t) && schema.Equal(schema.Of(t), schema.Of(v)) {
				twin = t.Name
				break
			}
		}
		var lost []NoneLoss
		for _, p := range schema.PrunedFields(schema.Of(&other), schema.Of(v)) {
			lost = append(lost, NoneLoss{Path: p, Text: fmt.Sprintf("%s at %s (read or written through %s)", p, other.Name, subject)})
		}
		for _, p := range schema.PrunedFields(schema.Of(v), schema.Of(&other)) {
			lost = append(lost, NoneLoss{Path: p, Text: fmt.Sprintf("%s at %s (read or written through %s)", p, subject, other.Name)})
		}
		if twin == "" {
			brought = append(brought, lost...)
			continue
		}
		for _, l := range lost {
			l.Text = fmt.Sprintf("%s, as between %s and %s already", l.Text, twin, other.Name)
			already = append(already, l)
		}
	}
	return brought, already
}

func otherServed(crd *apiextensionsv1.CustomResourceDefinition, name string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != name {
			return true
		}
	}
	return false
}

var invalidGroupVersion = regexp.MustCompile(`invalid group/version: [^/\s]+/([a-z0-9-]+)`)

// UnreadableObjects is the finding for a list of the CRD's objects through
// version that the API server refused with message. Forbidden and
// Unauthorized mean this user may not list them (ObjectsNotCounted, info);
// anything else means the API server cannot read them (ObjectsUnreadable,
// error), and the fix follows from the message: objects stored at a version
// missing from spec.versions ("request to convert CR from an invalid
// group/version: <group>/<version>") need that version restored; a failing
// conversion webhook needs repair.
func UnreadableObjects(a Analysis, version, message string, forbidden bool) Finding {
	if forbidden {
		return Finding{
			Code: CodeObjectsNotCounted, Severity: SeverityInfo, Version: version,
			Message: "objects not counted: " + message,
			Fix:     fmt.Sprintf("grant list on %s.%s, or pass --count=false", a.CRD.Plural, a.CRD.Group),
		}
	}
	f := Finding{
		Code: CodeObjectsUnreadable, Severity: SeverityError, Version: version,
		Message: fmt.Sprintf("listing objects at %s failed: %s", version, message),
	}
	switch m := invalidGroupVersion.FindStringSubmatch(message); {
	case m != nil && !versionInSpec(a, m[1]):
		f = f.WithRun(RestoreUnserved(a.CRD.Name, m[1]))
		f.Message += fmt.Sprintf("; objects are stored at %s, which is no longer in spec.versions", m[1])
		if !versionStored(a, m[1]) {
			f.Message += fmt.Sprintf(", and status.storedVersions no longer lists it (it was trimmed before they were rewritten): restoring %s with add-version lists it there again, so that migrate rewrites them before %s can go", m[1], m[1])
		}
	case strings.Contains(message, "conversion webhook"):
		f.Fix = WebhookRepair(a)
	}
	return f
}

// WebhookRepair says what to do about a failing conversion webhook of the
// analysed CRD: repair it (naming its Service or URL), or — when every
// version has the same schema, so that None conversion loses nothing —
// switch the strategy to None.
func WebhookRepair(a Analysis) string {
	target, ask := "the conversion webhook", "is it running, does the caBundle match its certificate?"
	if w := a.Conversion.Webhook; w != nil && w.Service != "" {
		target += " (service " + w.Service + ")"
		ask = "is its Service running with ready endpoints, does the caBundle match its certificate?"
	} else if w != nil && w.URL != "" {
		target += " (" + w.URL + ")"
		ask = "does it answer at that URL from the API server, does its certificate verify (the caBundle, or the system trust roots without one)?"
	}
	fix := "repair " + target + ": " + ask + " Until then objects stored at another version than the one requested cannot be read, written or deleted (namespace deletion and garbage collection hang on them too)"
	if a.sameSchemas() {
		fix += "; every version has the same schema, so conversion strategy None makes the objects readable again (a break-glass: None converts nothing, so any write under it — a migration's too — stores objects as the webhook would not have; the patch marks the CRD so that migrate refuses until the webhook is back): " +
			NoneConversionOn(a.CRD.Name, webhookName(a.Conversion.Webhook)).String()
	}
	return fix
}

// webhookName names a conversion webhook by its Service or URL.
func webhookName(w *Webhook) string {
	switch {
	case w == nil:
		return "webhook"
	case w.Service != "":
		return "service " + w.Service
	case w.URL != "":
		return w.URL
	}
	return "webhook"
}

// BreakGlassAnnotation marks a CRD whose conversion strategy None stands in
// for a conversion webhook that does not answer (NoneConversionOn); its
// value names the webhook. While it is set under None, reads work, but
// every write stores objects unconverted: migrate refuses, and status
// reports CodeConversionBreakGlass.
const BreakGlassAnnotation = "crdversion.kubectl.io/conversion-break-glass"

// CodeConversionBreakGlass reports conversion strategy None standing in for
// a conversion webhook (BreakGlassAnnotation).
const CodeConversionBreakGlass = "ConversionBreakGlass"

// BreakGlass reports whether conversion strategy None of crd stands in for
// a conversion webhook (BreakGlassAnnotation under None), and which.
func BreakGlass(crd *apiextensionsv1.CustomResourceDefinition) (webhook string, on bool) {
	webhook, marked := crd.Annotations[BreakGlassAnnotation]
	return webhook, marked && !UsesWebhook(crd)
}

// breakGlass finds conversion None standing in for a webhook, and a mark
// left behind once the webhook is back.
func breakGlass(crd *apiextensionsv1.CustomResourceDefinition) []Finding {
	webhook, marked := crd.Annotations[BreakGlassAnnotation]
	if !marked {
		return nil
	}
	unmark := Kubectl("annotate", "crd", crd.Name, BreakGlassAnnotation+"-")
	if UsesWebhook(crd) {
		return []Finding{{Code: CodeConversionBreakGlass, Severity: SeverityInfo,
			Message: fmt.Sprintf("the conversion webhook is configured again, but the break-glass mark %s remains", BreakGlassAnnotation),
			Fix:     "remove it: " + unmark.String()}}
	}
	return []Finding{{Code: CodeConversionBreakGlass, Severity: SeverityError,
		Message: fmt.Sprintf("conversion strategy None stands in for the conversion webhook (%s), a break-glass: objects read at every version as stored, and every write, a migration's too, stores them unconverted; migrate refuses until the webhook is back", webhook),
		Fix:     "restore spec.conversion as the CRD's release has it (strategy Webhook and its clientConfig; helm upgrade, kubectl apply) once the webhook answers, then " + unmark.String() + "; if the versions need no conversion at all, keeping None, remove the mark alone"}}
}

// sameSchemas reports whether every version in spec.versions has the
// storage version's schema.
func (a Analysis) sameSchemas() bool {
	if a.StorageVersion == "" {
		return false
	}
	for _, v := range a.Versions {
		if v.InSpec && v.Schema != SchemaIsStorage && v.Schema != SchemaIdentical {
			return false
		}
	}
	return true
}

// NoneConversionOn is the kubectl command that sets the conversion strategy
// of the CRD name to None, removing the webhook configuration, and marks
// the CRD with BreakGlassAnnotation naming webhook.
func NoneConversionOn(name, webhook string) Command {
	value, _ := json.Marshal(webhook)
	return Kubectl("patch", "crd", name).With("type", "merge").With("p",
		`{"metadata":{"annotations":{"`+BreakGlassAnnotation+`":`+string(value)+`}},"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
}

// ObjectsReadable records that every object of the CRD was listed through
// version without error. No object can then be stored at a version missing
// from spec.versions (reading it would fail with "invalid group/version"),
// so a storedVersions entry missing from spec — typically a mistaken write
// to the status subresource, which the API server does not validate — is
// repaired by migrate (a clean pass trims storedVersions to the storage
// version) rather than by restoring the version.
func (a *Analysis) ObjectsReadable(version string) {
	for i, f := range a.Findings {
		if f.Code != CodeStoredVersionNotInSpec || a.StorageVersion == "" {
			continue
		}
		a.Findings[i].Message = fmt.Sprintf("status.storedVersions lists %s but spec.versions does not, so every update of this CRD is rejected; every object could be read at %s, so none is stored at %s (a mistaken write to the status subresource, which the API server accepts unchecked)", f.Version, version, f.Version)
		a.Findings[i] = a.Findings[i].WithRun(migrateFix(*a)...)
	}
	a.settle()
}

// StoredAt reports whether message, the API server's answer to a list of
// the objects of a CRD of group, says that an object is stored at version
// ("request to convert CR from an invalid group/version: GROUP/VERSION",
// the answer while version is missing from spec.versions).
func StoredAt(group, version, message string) bool {
	for _, m := range invalidGroupVersion.FindAllStringSubmatch(message, -1) {
		if m[1] == version && strings.Contains(m[0], " "+group+"/") {
			return true
		}
	}
	return false
}

func versionStored(a Analysis, name string) bool {
	for _, v := range a.Versions {
		if v.Name == name && v.InStoredVersions {
			return true
		}
	}
	return false
}

func versionInSpec(a Analysis, name string) bool {
	for _, v := range a.Versions {
		if v.Name == name && v.InSpec {
			return true
		}
	}
	return false
}

// CodeVersionRetirable reports an old version that is neither served nor
// in status.storedVersions, other than the one the state is about: nothing
// keeps it in spec.versions but managedFields entries that name it, which
// retire checks.
const CodeVersionRetirable = "VersionRetirable"

// retirable finds the versions CodeVersionRetirable reports: older than the
// storage version, not served, not stored, and not the state's OLD (whose
// step is Next).
func retirable(crd *apiextensionsv1.CustomResourceDefinition, a Analysis) []Finding {
	var out []Finding
	for _, v := range crd.Spec.Versions {
		if v.Served || v.Storage || v.Name == a.OldVersion || slices.Contains(crd.Status.StoredVersions, v.Name) || !a.order.Newer(a.StorageVersion, v.Name) {
			continue
		}
		out = append(out, Finding{
			Code: CodeVersionRetirable, Severity: SeverityInfo, Version: v.Name,
			Message: fmt.Sprintf("%s is neither served nor in status.storedVersions: it can leave spec.versions", v.Name),
			Fix:     "see what removing it takes (objects whose managedFields name it are rewritten first): " + Crdversion("retire", crd.Name, v.Name).With("migrate", "").With("dry-run", "").String(),
		})
	}
	return out
}
