package lifecycle

import (
	"fmt"
	"strings"
)

// Codes of the findings that doctor adds to those of Analyze.
const (
	// CodeStoredVersionsReadyToTrim: status.storedVersions lists versions
	// other than the storage version, and the CRD has no object, so
	// nothing can be stored at them: migrate trims them at no cost.
	CodeStoredVersionsReadyToTrim = "StoredVersionsReadyToTrim"
	// CodeObjectsUnlistable: no served version lists the objects.
	CodeObjectsUnlistable = "ObjectsUnlistable"
	// CodeWebhookUnreachable: the conversion webhook does not answer, or
	// its Service has no ready endpoint.
	CodeWebhookUnreachable = "WebhookUnreachable"
	// CodeWebhookNotChecked: the conversion webhook could not be checked
	// from the client (no permission to read its Service).
	CodeWebhookNotChecked = "WebhookNotChecked"
	// CodeDeprecatedVersionInUse: a deprecated version still receives
	// requests (from the API server's metrics).
	CodeDeprecatedVersionInUse = "DeprecatedVersionInUse"
	// CodeOldVersionInUse: the client usage of a served version older than
	// the storage version and not yet deprecated (information: the clients
	// to move before it is deprecated).
	CodeOldVersionInUse = "OldVersionInUse"
	// CodeReferencesBroken: objects' owner references name a version
	// of the CRD that is not served (or not in spec.versions): the
	// garbage collector cannot resolve that owner (kubernetes/kubernetes#102641).
	CodeReferencesBroken = "ReferencesBroken"
	// CodeReferencesUnknown: resources whose objects could not be
	// read, so references there are unknown.
	CodeReferencesUnknown = "ReferencesUnknown"
	// CodeAdmissionRulesBlind: webhook or policy rules of the CRD's
	// resource list no version they can be matched through (an Exact
	// rule no served version, an Equivalent one no version in
	// spec.versions): they see no request and enforce nothing.
	CodeAdmissionRulesBlind = "AdmissionRulesBlind"
	// CodeAdmissionRulesUnknown: the admission rules could not be read.
	CodeAdmissionRulesUnknown = "AdmissionRulesUnknown"
	// CodeStorageMigrationNotProof: a StorageVersionMigration of the
	// CRD's resource Succeeded, yet status.storedVersions lists versions
	// besides the storage version (case 34: a one-shot object is no
	// proof of a migration after the storage version changed).
	CodeStorageMigrationNotProof = "StorageMigrationNotProof"
	// CodeStorageMigrationFailed: one Failed and no later one succeeded.
	CodeStorageMigrationFailed = "StorageMigrationFailed"
	// CodeStorageMigrationPending: one has no terminal condition yet
	// (a warning when no migrator has acted on it for long).
	CodeStorageMigrationPending = "StorageMigrationPending"
	// CodeStorageMigrationsUnknown: the StorageVersionMigrations could
	// not be listed.
	CodeStorageMigrationsUnknown = "StorageMigrationsUnknown"
)

// ReadyToTrim returns the finding for a CRD with objects objects whose
// status.storedVersions lists versions besides the storage version, or
// nil. With no object, nothing is stored at them, and the API server
// would accept removing those versions once storedVersions is trimmed;
// with objects, Analyze reports MigrationPending instead.
func ReadyToTrim(a Analysis, objects int) *Finding {
	if objects != 0 || a.StorageVersion == "" {
		return nil
	}
	var extra []string
	for _, s := range a.StoredVersions {
		if s != a.StorageVersion {
			extra = append(extra, s)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	f := Finding{
		Code: CodeStoredVersionsReadyToTrim, Severity: SeverityWarning, Version: strings.Join(extra, ","),
		Message: fmt.Sprintf("status.storedVersions lists %s besides the storage version %s, and the CRD has no object: trim it so that a release without %s can be applied", strings.Join(extra, ", "), a.StorageVersion, strings.Join(extra, ", ")),
	}.WithRun(Crdversion("migrate", a.CRD.Name))
	return &f
}
