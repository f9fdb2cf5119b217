package lifecycle

import (
	"fmt"
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

	if n := len(StorageVersions(crd)); n != 1 {
		add(Finding{
			Code: CodeStorageVersionCount, Severity: SeverityError,
			Message: fmt.Sprintf("%d versions have storage: true; exactly one must", n),
			Fix:     "set storage: true on exactly one version in spec.versions",
		})
	}

	for _, s := range crd.Status.StoredVersions {
		if FindVersion(crd, s) != nil {
			continue
		}
		add(Finding{
			Code: CodeStoredVersionNotInSpec, Severity: SeverityError, Version: s,
			Message: fmt.Sprintf("status.storedVersions lists %s but spec.versions does not: objects still stored at %s cannot be read, listed or deleted, and every update of this CRD is rejected; restore %s unserved, then run migrate", s, s, s),
			Fix: fmt.Sprintf("kubectl crdversion add-version %s %s --from %s --served=false",
				name, s, orPlaceholder(a.StorageVersion)),
		})
	}
	for _, s := range crd.Status.StoredVersions {
		if s == a.StorageVersion || FindVersion(crd, s) == nil || a.StorageVersion == "" {
			continue
		}
		add(Finding{
			Code: CodeMigrationPending, Severity: SeverityWarning, Version: s,
			Message: fmt.Sprintf("status.storedVersions still lists %s: objects may be stored at %s until every object is rewritten at %s; %s cannot be removed from spec.versions before that", s, s, a.StorageVersion, s),
			Fix:     fmt.Sprintf("kubectl crdversion migrate %s", name),
		})
	}

	served := 0
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served++
		}
		if v.Served && v.Deprecated {
			add(Finding{
				Code: CodeDeprecatedServed, Severity: SeverityInfo, Version: v.Name,
				Message: fmt.Sprintf("%s is deprecated and still served; clients using it get a warning", v.Name),
				Fix:     fmt.Sprintf("kubectl crdversion unserve %s %s (once no client requests it)", name, v.Name),
			})
		}
		if v.Storage && !v.Served {
			add(Finding{
				Code: CodeStorageVersionNotServed, Severity: SeverityInfo, Version: v.Name,
				Message: fmt.Sprintf("the storage version %s is not served; objects are read and written through other versions only", v.Name),
			})
		}
	}
	if served == 0 && len(crd.Spec.Versions) > 0 {
		add(Finding{
			Code: CodeNoServedVersion, Severity: SeverityWarning,
			Message: "no version is served: the API server offers no endpoint for this resource",
			Fix:     fmt.Sprintf("kubectl crdversion serve %s %s", name, orPlaceholder(a.StorageVersion)),
		})
	}
	if a.StorageVersion != "" && a.State != StateS1 {
		for _, v := range crd.Spec.Versions {
			if v.Served && HigherPriority(v.Name, a.StorageVersion) {
				add(Finding{
					Code: CodeStorageNotHighestVersion, Severity: SeverityInfo, Version: v.Name,
					Message: fmt.Sprintf("%s has higher priority than the storage version %s", v.Name, a.StorageVersion),
				})
			}
		}
	}

	out = append(out, conditionFindings(crd)...)
	out = append(out, conversionFindings(crd, a)...)

	if crd.Spec.PreserveUnknownFields {
		add(Finding{
			Code: CodePreserveUnknownFields, Severity: SeverityWarning,
			Message: "spec.preserveUnknownFields is true: unknown fields are stored instead of pruned, schema defaults are not applied, and Webhook conversion is not allowed",
			Fix:     "set spec.preserveUnknownFields: false, with x-kubernetes-preserve-unknown-fields: true in the schemas where unknown fields must be kept",
		})
	}
	return out
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
			})
		case c.Type == apiextensionsv1.NonStructuralSchema && c.Status == apiextensionsv1.ConditionTrue:
			out = append(out, Finding{
				Code: CodeNonStructuralSchema, Severity: SeverityWarning,
				Message: "a version's schema is not structural (" + detail + "): pruning and defaulting do not work as expected",
			})
		case c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue:
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
		switch {
		case w == nil:
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

func orPlaceholder(s string) string {
	if s == "" {
		return "<version>"
	}
	return s
}

// CodeObjectsUnreadable reports that listing the CRD's objects failed.
const CodeObjectsUnreadable = "ObjectsUnreadable"

// UnreadableObjects is the finding for a list of the CRD's objects through
// version that the API server refused with message, typically because some
// objects are stored at a version no longer in spec.versions
// ("StorageReadError … request to convert CR from an invalid group/version").
// The fix is the one for the first storedVersions entry missing from spec,
// when there is one.
func UnreadableObjects(a Analysis, version, message string) Finding {
	f := Finding{
		Code: CodeObjectsUnreadable, Severity: SeverityError, Version: version,
		Message: fmt.Sprintf("listing objects at %s failed: %s", version, message),
	}
	for _, other := range a.Findings {
		if other.Code == CodeStoredVersionNotInSpec {
			f.Fix = other.Fix
			break
		}
	}
	return f
}
