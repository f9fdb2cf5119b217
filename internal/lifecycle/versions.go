// Package lifecycle is the pure core of kubectl crdversion: it reads a
// CustomResourceDefinition and tells where its API versions stand in the
// lifecycle of the Kubernetes task page "Versions in CustomResourceDefinitions"
// (states S0–S6, see docs/lifecycle.md), which findings apply, and which
// command moves it on. Nothing here performs I/O or modifies its input.
package lifecycle

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// ByPriority sorts version names the way the API server orders a CRD's
// versions in discovery and kubectl picks its default: GA before beta before
// alpha, higher numbers first, names not in Kubernetes version form last in
// alphabetical order (k8s.io/apimachinery/pkg/version.CompareKubeAwareVersionStrings).
// It returns a new slice.
func ByPriority(names []string) []string {
	out := append([]string(nil), names...)
	sort.SliceStable(out, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(out[i], out[j]) > 0
	})
	return out
}

// HigherPriority reports whether version a sorts before b in kubectl's
// version priority.
func HigherPriority(a, b string) bool {
	return version.CompareKubeAwareVersionStrings(a, b) > 0
}

// IsKubeVersion reports whether name has the Kubernetes version form
// v<major>[(alpha|beta)<minor>], such as v1, v2beta1 or v1alpha3.
func IsKubeVersion(name string) bool {
	// A conforming name sorts above every non-conforming one; two
	// non-conforming names compare in reverse alphabetical order, which puts
	// any non-empty name below "". So only conforming names beat "".
	return name != "" && version.CompareKubeAwareVersionStrings(name, "") > 0
}

// DefaultVersion returns the version kubectl uses when none is given: the
// served version of highest priority. It is empty when no version is served.
func DefaultVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	if len(served) == 0 {
		return ""
	}
	return ByPriority(served)[0]
}

// StorageVersions returns the names of the versions with storage: true, in
// spec order. A CRD accepted by the API server has exactly one.
func StorageVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			out = append(out, v.Name)
		}
	}
	return out
}

// StorageVersion returns the single storage version, or "" when the CRD has
// none or several (only possible in a manifest the API server would reject).
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	if s := StorageVersions(crd); len(s) == 1 {
		return s[0]
	}
	return ""
}

// FindVersion returns the spec.versions entry named name, or nil.
func FindVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// CRDArg is arg, a CustomResourceDefinition as a command line names it,
// without the resource type kubectl's TYPE/NAME form puts before it:
// crd/NAME, crds/NAME or customresourcedefinition(s)[.apiextensions.k8s.io]/NAME
// is NAME. An arg without "/" is returned as it is; another type is an
// error, since only CRDs are named.
func CRDArg(arg string) (string, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	switch strings.ToLower(typ) {
	case "crd", "crds", "customresourcedefinition", "customresourcedefinitions",
		"customresourcedefinition.apiextensions.k8s.io", "customresourcedefinitions.apiextensions.k8s.io":
		if name != "" && !strings.Contains(name, "/") {
			return name, nil
		}
	}
	return "", fmt.Errorf("%q: name a CustomResourceDefinition as NAME or crd/NAME (its name, plural, kind or short name)", arg)
}

// MatchCRDs returns the CRDs that arg names: a plural, singular, short name
// or kind (case-insensitive), alone or followed by ".<group>" or
// ".<version>.<group>".
func MatchCRDs(crds []apiextensionsv1.CustomResourceDefinition, arg string) []*apiextensionsv1.CustomResourceDefinition {
	lower := strings.ToLower(arg)
	name, qualifier, _ := strings.Cut(lower, ".")
	var out []*apiextensionsv1.CustomResourceDefinition
	for i := range crds {
		crd := &crds[i]
		names := append([]string{crd.Spec.Names.Plural, crd.Spec.Names.Singular, strings.ToLower(crd.Spec.Names.Kind)}, crd.Spec.Names.ShortNames...)
		if name == "" || !slices.Contains(names, name) {
			continue
		}
		group := strings.ToLower(crd.Spec.Group)
		if qualifier == "" || qualifier == group {
			out = append(out, crd)
			continue
		}
		if version, rest, ok := strings.Cut(qualifier, "."); ok && rest == group {
			for _, v := range crd.Spec.Versions {
				if v.Name == version {
					out = append(out, crd)
					break
				}
			}
		}
	}
	return out
}

// ListVersion returns the version through which objects of crd are listed:
// the storage version when it is served, else kubectl's default version.
// It is empty when no version is served.
func ListVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Storage {
			return v.Name
		}
	}
	return DefaultVersion(crd)
}

// ConversionProbeVersion returns a served version other than listed through
// which a list of crd's objects exercises its conversion webhook: kubectl's
// default version when it differs from listed, else the served version of
// highest priority that does. It is empty when crd uses no webhook or
// serves no other version.
func ConversionProbeVersion(crd *apiextensionsv1.CustomResourceDefinition, listed string) string {
	if !UsesWebhook(crd) {
		return ""
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != listed {
			served = append(served, v.Name)
		}
	}
	if def := DefaultVersion(crd); def != listed && slices.Contains(served, def) {
		return def
	}
	if len(served) == 0 {
		return ""
	}
	return ByPriority(served)[0]
}

// UsesWebhook reports whether crd's conversion strategy is Webhook.
func UsesWebhook(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
}

// ConversionWebhook is crd's conversion webhook when its strategy is
// Webhook and it says where the webhook is (spec.conversion.webhook with a
// clientConfig); nil otherwise (Analyze reports an incomplete one).
func ConversionWebhook(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.WebhookConversion {
	if !UsesWebhook(crd) || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
		return nil
	}
	return crd.Spec.Conversion.Webhook
}

// VersionNames are the names in crd's spec.versions, in spec order.
func VersionNames(crd *apiextensionsv1.CustomResourceDefinition) []string {
	names := make([]string, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
	}
	return names
}

// GroupVersion is "<group>/<version>" of crd, the apiVersion of its objects
// at version.
func GroupVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) string {
	return crd.Spec.Group + "/" + version
}
