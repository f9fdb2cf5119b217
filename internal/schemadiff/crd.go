package schemadiff

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// Versions compares two versions of one CRD: what objects written at from
// become when read or written at to. With conversion strategy None the API
// server only rewrites apiVersion, so the property findings are what
// happens to the data; with Webhook conversion the webhook decides how
// fields map, so errors are reported as warnings. It fails when either
// version is not in spec.versions.
func Versions(crd *apiextensionsv1.CustomResourceDefinition, from, to string) ([]Finding, error) {
	f, t := lifecycle.FindVersion(crd, from), lifecycle.FindVersion(crd, to)
	for _, v := range []struct {
		name string
		ver  *apiextensionsv1.CustomResourceDefinitionVersion
	}{{from, f}, {to, t}} {
		if v.ver == nil {
			return nil, fmt.Errorf("%s has no version %s (it has %s)", crd.Name, v.name, strings.Join(lifecycle.VersionNames(crd), ", "))
		}
	}
	out := Schemas(schema.Of(f), schema.Of(t))
	if isWebhook(crd) {
		for i := range out {
			if out[i].Severity == lifecycle.SeverityError {
				out[i].Severity = lifecycle.SeverityWarning
				out[i].Message += " (unless the conversion webhook maps it)"
			}
		}
	} else if len(out) > 0 && f.Served && t.Served {
		out = append(out, noneConversion(f, t, nil)...)
	}
	out = append(out, VersionParts(f, t)...)
	Sort(out)
	return nameRules(out), nil
}

func isWebhook(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return lifecycle.UsesWebhook(crd)
}

// noneConversion is the finding for two served versions of a CRD with
// conversion strategy None whose schemas differ: an error when fields are
// pruned between them, none when every one of those fields was pruned
// between the same versions before (before; nil when there is no before:
// a diff reports changes, and status reports the CRD as it is), an info
// when only validation or defaults differ.
func noneConversion(a, b *apiextensionsv1.CustomResourceDefinitionVersion, before *[2][]string) []Finding {
	if schema.Equal(schema.Of(a), schema.Of(b)) {
		return nil
	}
	ab := schema.PrunedFields(schema.Of(a), schema.Of(b))
	ba := schema.PrunedFields(schema.Of(b), schema.Of(a))
	if len(ab)+len(ba) == 0 {
		return []Finding{{Code: CodeNoneConversionSchemas, Severity: lifecycle.SeverityInfo, Version: b.Name, Path: "spec.conversion",
			Message: fmt.Sprintf("conversion strategy None between %s and %s, whose schemas differ in validation or defaults (no field is pruned)", a.Name, b.Name)}}
	}
	var parts []string
	if len(ab) > 0 {
		parts = append(parts, fmt.Sprintf("objects written at %s lose %s when read or written at %s", a.Name, strings.Join(ab, ", "), b.Name))
	}
	if len(ba) > 0 {
		parts = append(parts, fmt.Sprintf("objects written at %s lose %s when read or written at %s", b.Name, strings.Join(ba, ", "), a.Name))
	}
	if before != nil && isSubset(ab, before[0]) && isSubset(ba, before[1]) {
		return nil
	}
	return []Finding{{Code: CodeNoneConversionPrunes, Severity: lifecycle.SeverityError, Version: b.Name, Path: "spec.conversion",
		Message: fmt.Sprintf("conversion strategy None between the served versions %s and %s only rewrites apiVersion: %s", a.Name, b.Name, strings.Join(parts, "; "))}}
}

func isSubset(a, b []string) bool {
	missing, _ := setDiff(a, b)
	return len(missing) == 0
}

// CRDs compares the CRD as installed (old, whose status.storedVersions
// counts; when it has none, its storage version is taken as the only
// stored one) with a new manifest of the same CRD: the API server's update
// rules (storedVersions, immutable scope and kind), versions removed,
// unserved, added, the storage and default version, conversion None
// between differing served schemas, and, for every version in both, the
// property findings of Schemas.
func CRDs(old, new *apiextensionsv1.CustomResourceDefinition) []Finding {
	var out []Finding
	add := func(code string, sev lifecycle.Severity, version, path, format string, args ...any) {
		out = append(out, Finding{Code: code, Severity: sev, Version: version, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if old.Spec.Group != new.Spec.Group {
		add(CodeGroupChanged, lifecycle.SeverityError, "", "spec.group", "group changed from %s to %s: the API server rejects the update (spec.group is immutable)", old.Spec.Group, new.Spec.Group)
	}
	if old.Spec.Scope != new.Spec.Scope {
		add(CodeScopeChanged, lifecycle.SeverityError, "", "spec.scope", "scope changed from %s to %s: the API server rejects the update of an established CRD (spec.scope is immutable): not a version change; re-creating the CRD deletes every object of it, so a way out starts with an export of them (check-upgrade against the cluster counts them and prints it)", old.Spec.Scope, new.Spec.Scope)
	}
	if old.Spec.Names.Kind != new.Spec.Names.Kind {
		add(CodeKindChanged, lifecycle.SeverityError, "", "spec.names.kind", "kind changed from %s to %s: the API server rejects the update of an established CRD (spec.names.kind is immutable)", old.Spec.Names.Kind, new.Spec.Names.Kind)
	}

	newStorage := lifecycle.StorageVersion(new)
	if n := len(lifecycle.StorageVersions(new)); n != 1 {
		add(CodeStorageVersionCount, lifecycle.SeverityError, "", "spec.versions", "%d versions have storage: true; the API server rejects a CRD without exactly one", n)
	}
	for _, s := range StoredVersions(old) {
		if lifecycle.FindVersion(new, s) == nil {
			add(CodeStoredVersionRemoved, lifecycle.SeverityError, s, "status.storedVersions",
				"%s is in status.storedVersions but not in the new spec.versions: the API server rejects the update until every object stored at %s is rewritten at the storage version and status.storedVersions is trimmed (kubectl crdversion migrate %s)", s, s, old.Name)
		}
	}
	oldStorage := lifecycle.StorageVersion(old)
	switch {
	case oldStorage == "" || newStorage == "" || oldStorage == newStorage:
	case lifecycle.FindVersion(new, oldStorage) == nil:
		add(CodeStorageVersionRemoved, lifecycle.SeverityError, oldStorage, "spec.versions",
			"the storage version %s is removed; objects written since it became the storage version are stored at %s, and the new storage version is %s", oldStorage, oldStorage, newStorage)
	default:
		add(CodeStorageVersionChanged, lifecycle.SeverityInfo, newStorage, "spec.versions",
			"the storage version changes from %s to %s: objects written from then on are stored at %s; existing ones stay at %s until rewritten (kubectl crdversion migrate %s)", oldStorage, newStorage, newStorage, oldStorage, old.Name)
	}

	for _, ov := range old.Spec.Versions {
		nv := lifecycle.FindVersion(new, ov.Name)
		switch {
		case nv == nil && ov.Served:
			add(CodeVersionRemoved, lifecycle.SeverityWarning, ov.Name, "spec.versions", "served version %s is removed: clients and manifests that use %s/%s get 404 (the server could not find the requested resource)", ov.Name, old.Spec.Group, ov.Name)
		case nv == nil:
			add(CodeVersionRemoved, lifecycle.SeverityInfo, ov.Name, "spec.versions", "version %s (not served) is removed", ov.Name)
		case ov.Served && !nv.Served:
			add(CodeVersionUnserved, lifecycle.SeverityWarning, ov.Name, "spec.versions", "version %s is no longer served: clients that use %s/%s get 404", ov.Name, old.Spec.Group, ov.Name)
		case !ov.Served && nv.Served:
			add(CodeVersionServed, lifecycle.SeverityInfo, ov.Name, "spec.versions", "version %s is served now", ov.Name)
		}
		if nv != nil {
			for _, f := range append(Schemas(schema.Of(&ov), schema.Of(nv)), VersionParts(&ov, nv)...) {
				f.Version = ov.Name
				out = append(out, f)
			}
		}
	}
	for _, nv := range new.Spec.Versions {
		if lifecycle.FindVersion(old, nv.Name) == nil {
			add(CodeVersionAdded, lifecycle.SeverityInfo, nv.Name, "spec.versions", "version %s is added (served: %v)", nv.Name, nv.Served)
		}
	}
	if od, nd := lifecycle.DefaultVersion(old), lifecycle.DefaultVersion(new); od != nd {
		add(CodeDefaultVersionChanged, lifecycle.SeverityWarning, nd, "spec.versions", "kubectl's default version changes from %s to %s: kubectl get %s without a version returns %s objects", dash(od), dash(nd), old.Spec.Names.Plural, dash(nd))
	}
	if os, ns := strategy(old), strategy(new); os != ns {
		add(CodeConversionChanged, lifecycle.SeverityInfo, "", "spec.conversion.strategy", "conversion strategy changes from %s to %s", os, ns)
	}
	out = append(out, noneConversionOf(old, new)...)
	Sort(out)
	return nameRules(out)
}

// StoredVersions is the CRD's status.storedVersions, or, for a manifest
// without status, its storage version (the least the API server records).
func StoredVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	if len(crd.Status.StoredVersions) > 0 {
		return crd.Status.StoredVersions
	}
	if s := lifecycle.StorageVersion(crd); s != "" {
		return []string{s}
	}
	return nil
}

func strategy(crd *apiextensionsv1.CustomResourceDefinition) string {
	if isWebhook(crd) {
		return string(apiextensionsv1.WebhookConverter)
	}
	return string(apiextensionsv1.NoneConverter)
}

// noneConversionOf lists, for a new CRD with conversion strategy None, each
// served version whose schema differs from the storage version's.
func noneConversionOf(old, new *apiextensionsv1.CustomResourceDefinition) []Finding {
	if isWebhook(new) {
		return nil
	}
	storage := lifecycle.FindVersion(new, lifecycle.StorageVersion(new))
	if storage == nil {
		return nil
	}
	var out []Finding
	for i := range new.Spec.Versions {
		v := &new.Spec.Versions[i]
		if v.Name == storage.Name || !v.Served {
			continue
		}
		// What the old CRD already pruned between the same two served
		// versions under None.
		var before *[2][]string
		if os, ov := lifecycle.FindVersion(old, storage.Name), lifecycle.FindVersion(old, v.Name); !isWebhook(old) && os != nil && ov != nil && ov.Served {
			before = &[2][]string{schema.PrunedFields(schema.Of(os), schema.Of(ov)), schema.PrunedFields(schema.Of(ov), schema.Of(os))}
		}
		out = append(out, noneConversion(storage, v, before)...)
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == lifecycle.SeverityError })
}
