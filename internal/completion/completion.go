// Package completion answers shell completion from CRDs already read: the
// names and versions a command line can name, each with the description a
// shell shows beside it ("NAME\tDESCRIPTION", the form cobra takes). The
// commands in internal/cli read the CRDs and hand the answers to cobra.
package completion

import (
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// CRDNames returns the names of crds that start with prefix and are not in
// given, sorted, each as "NAME\tKIND".
func CRDNames(crds []apiextensionsv1.CustomResourceDefinition, given []string, prefix string) []string {
	var out []string
	for _, crd := range crds {
		if strings.HasPrefix(crd.Name, prefix) && !slices.Contains(given, crd.Name) {
			out = append(out, crd.Name+"\t"+crd.Spec.Names.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// Versions returns the versions in crd's spec.versions that start with
// prefix and are not in given, in kubectl's priority order
// (lifecycle.ByPriority), each as "NAME\tSTATE" (see VersionState).
func Versions(crd *apiextensionsv1.CustomResourceDefinition, given []string, prefix string) []string {
	var names []string
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
	}
	var out []string
	for _, name := range lifecycle.ByPriority(names) {
		if strings.HasPrefix(name, prefix) && !slices.Contains(given, name) {
			out = append(out, name+"\t"+VersionState(crd, *lifecycle.FindVersion(crd, name)))
		}
	}
	return out
}

// VersionState describes version v of crd in a few comma-separated words,
// in this order: "storage" when it is the storage version, "served" or
// "not served", "deprecated" when it is, and "in storedVersions" when
// crd's status.storedVersions lists it.
func VersionState(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) string {
	var s []string
	if v.Storage {
		s = append(s, "storage")
	}
	if v.Served {
		s = append(s, "served")
	} else {
		s = append(s, "not served")
	}
	if v.Deprecated {
		s = append(s, "deprecated")
	}
	if slices.Contains(crd.Status.StoredVersions, v.Name) {
		s = append(s, "in storedVersions")
	}
	return strings.Join(s, ", ")
}
