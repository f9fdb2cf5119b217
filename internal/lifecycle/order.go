package lifecycle

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// OrderBasis says what an Order took the relative age of two versions from.
type OrderBasis string

// The bases of an order, in the order they are consulted.
const (
	// OrderGiven: the order the user gave (--version-order).
	OrderGiven OrderBasis = "given"
	// OrderKubernetes: both names are in Kubernetes version form
	// (vN, vNalphaM, vNbetaM), which orders them.
	OrderKubernetes OrderBasis = "kubernetes"
	// OrderStoredVersions: both are in status.storedVersions, to which the
	// API server appends each version when it becomes the storage version.
	OrderStoredVersions OrderBasis = "storedVersions"
	// OrderUnknown: nothing says which is newer.
	OrderUnknown OrderBasis = ""
)

// Order tells which of a CRD's versions is newer. kubectl's version
// priority (ByPriority) is no such order: for names that are not in
// Kubernetes version form (v1api20210501, alpha, stable) it is alphabetical,
// and it ranks any Kubernetes-form name above them (v1beta20201101 above
// v1api20210501, which ASO published later). So an Order orders two names
// by, in turn: the order the user gave, Kubernetes' rules when both names
// follow them, and the order of status.storedVersions when both are listed
// there. Otherwise it says it does not know, and never guesses.
type Order struct {
	given  []string // oldest first
	stored []string
}

// OrderOf is the order of crd's versions; given, oldest first, is the order
// the user gave (may be nil).
func OrderOf(crd *apiextensionsv1.CustomResourceDefinition, given []string) Order {
	return Order{given: slices.Clone(given), stored: slices.Clone(crd.Status.StoredVersions)}
}

// Given is the order the user gave, oldest first.
func (o Order) Given() []string { return slices.Clone(o.given) }

// Compare returns +1 when a is newer than b, -1 when it is older, and 0
// when a == b or nothing says (basis OrderUnknown).
func (o Order) Compare(a, b string) (int, OrderBasis) {
	if a == b {
		return 0, OrderUnknown
	}
	if i, j := slices.Index(o.given, a), slices.Index(o.given, b); i >= 0 && j >= 0 {
		return sign(i - j), OrderGiven
	}
	if IsKubeVersion(a) && IsKubeVersion(b) {
		return sign(version.CompareKubeAwareVersionStrings(a, b)), OrderKubernetes
	}
	if i, j := slices.Index(o.stored, a), slices.Index(o.stored, b); i >= 0 && j >= 0 {
		return sign(i - j), OrderStoredVersions
	}
	return 0, OrderUnknown
}

// Newer reports whether a is known to be newer than b.
func (o Order) Newer(a, b string) bool {
	c, _ := o.Compare(a, b)
	return c > 0
}

// Sort returns names newest first. Names whose order is unknown keep their
// relative input order; sorting never falls back to the alphabet.
func (o Order) Sort(names []string) []string {
	out := slices.Clone(names)
	// A partial order is not a strict weak ordering, so sort.SliceStable
	// could reorder unknown pairs arbitrarily: a selection sort that only
	// ever swaps a pair the order knows.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if o.Newer(out[j], out[i]) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Newest is the newest of names by o (the first when unknown); "" for none.
func (o Order) Newest(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return o.Sort(names)[0]
}

// Oldest is the oldest of names by o (the last when unknown); "" for none.
func (o Order) Oldest(names []string) string {
	if len(names) == 0 {
		return ""
	}
	s := o.Sort(names)
	return s[len(s)-1]
}

// Unordered returns the versions of crd that o cannot order against
// storage, in spec order.
func (o Order) Unordered(crd *apiextensionsv1.CustomResourceDefinition, storage string) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Name == storage {
			continue
		}
		if _, basis := o.Compare(v.Name, storage); basis == OrderUnknown {
			out = append(out, v.Name)
		}
	}
	return out
}

// CheckVersionOrder validates a --version-order against crd: each name
// once, and each a version of crd (in spec.versions, storedVersions, or
// retired by retire: the order given before a retirement stays valid).
func CheckVersionOrder(crd *apiextensionsv1.CustomResourceDefinition, given []string) error {
	if len(given) == 0 {
		return nil
	}
	if len(given) < 2 {
		return fmt.Errorf("--version-order %s: give at least two versions, oldest first", strings.Join(given, ","))
	}
	known := append(append(VersionNames(crd), crd.Status.StoredVersions...), RetiredVersions(crd)...)
	seen := map[string]bool{}
	for _, g := range given {
		if seen[g] {
			return fmt.Errorf("--version-order %s: %s is given twice", strings.Join(given, ","), g)
		}
		seen[g] = true
		if !slices.Contains(known, g) {
			return fmt.Errorf("--version-order %s: %s has no version %s (its versions: %s)", strings.Join(given, ","), crd.Name, g, strings.Join(VersionNames(crd), ", "))
		}
	}
	return nil
}

// Codes of the findings about the order of versions.
const (
	// CodeVersionOrderUnknown: some version cannot be ordered against the
	// storage version, so the next step of the lifecycle is unknown.
	CodeVersionOrderUnknown = "VersionOrderUnknown"
	// CodeVersionOrderNotKubernetes: names outside Kubernetes version form
	// were ordered by other facts (the given order, storedVersions).
	CodeVersionOrderNotKubernetes = "VersionOrderNotKubernetes"
)

// AskOrder is the instruction, in words, to give the order of storage
// and the versions unordered against it: the names to list, and that no
// command can be printed for it (only the user knows the order).
func AskOrder(storage string, unordered []string) string {
	names := append(slices.Clone(unordered), storage)
	slices.Sort(names)
	return fmt.Sprintf("re-run status with --version-order listing the versions {%s} in their real order, oldest first (the braces list them alphabetically, which says nothing of their age; only you know which is newer, so no command is printed for it)",
		strings.Join(names, ", "))
}

// orderFindings says when kubectl's priority does not tell which version is
// newer: which order was used instead, or that none is known.
func orderFindings(crd *apiextensionsv1.CustomResourceDefinition, a Analysis, o Order) []Finding {
	if a.StorageVersion == "" {
		return nil
	}
	names := VersionNames(crd)
	nonKube := false
	for _, n := range names {
		if !IsKubeVersion(n) {
			nonKube = true
		}
	}
	if !nonKube || len(names) < 2 {
		return nil // one version: there is nothing to order
	}
	if unordered := o.Unordered(crd, a.StorageVersion); len(unordered) > 0 {
		return []Finding{{
			Code: CodeVersionOrderUnknown, Severity: SeverityWarning, Version: one(unordered),
			Message: fmt.Sprintf("%s and the storage version %s cannot be ordered by Kubernetes' version rules (vN, vNbetaM, vNalphaM; kubectl's priority is alphabetical for other names), and status.storedVersions does not list both: nothing says which is newer, so no lifecycle step is advised",
				strings.Join(unordered, ", "), a.StorageVersion),
			Fix: AskOrder(a.StorageVersion, unordered),
		}}
	}
	sorted := o.Sort(names)
	slices.Reverse(sorted)
	bases := map[OrderBasis]bool{}
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			_, b := o.Compare(sorted[i], sorted[j])
			bases[b] = true
		}
	}
	var from []string
	if bases[OrderGiven] {
		from = append(from, "--version-order")
	}
	if bases[OrderStoredVersions] {
		from = append(from, "the order of status.storedVersions")
	}
	if bases[OrderKubernetes] {
		from = append(from, "Kubernetes' version rules")
	}
	sort.Strings(from)
	return []Finding{{
		Code: CodeVersionOrderNotKubernetes, Severity: SeverityInfo,
		Message: fmt.Sprintf("not every version name is in Kubernetes version form, so kubectl's priority (alphabetical for such names) does not say which is newer; the order used, oldest first, is %s, from %s",
			strings.Join(sorted, ", "), strings.Join(from, " and ")),
	}}
}

func sign(n int) int {
	switch {
	case n > 0:
		return 1
	case n < 0:
		return -1
	}
	return 0
}

// one is the only name of names, else "".
func one(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return ""
}
