package lifecycle

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Codes of the differences between what two versions serve besides their
// schemas.
const (
	CodeStatusSubresourceRemoved = "StatusSubresourceRemoved"
	CodeStatusSubresourceAdded   = "StatusSubresourceAdded"
	CodeScaleSubresourceRemoved  = "ScaleSubresourceRemoved"
	CodeScaleSubresourceAdded    = "ScaleSubresourceAdded"
	CodeScaleSubresourceChanged  = "ScaleSubresourceChanged"
	CodePrinterColumnsChanged    = "PrinterColumnsChanged"
)

// PartDiff is one difference between what two versions serve besides
// their schemas: a subresource or the printer columns.
type PartDiff struct {
	Code     string
	Severity Severity
	// Path is the field of the version: "subresources.status",
	// "subresources.scale" or "additionalPrinterColumns".
	Path    string
	Message string
}

// PartDiffs compares what version new serves besides its schema — the
// status and scale subresources and the additionalPrinterColumns — with
// old (two versions of one CRD, or one version in two manifests). A
// subresource missing from new is a warning: without the status
// subresource, writes to /status are answered 404 and writes to the main
// resource change status (the API server ignores status there only while
// the subresource is enabled); without scale, kubectl scale and
// HorizontalPodAutoscalers fail. Printer columns are what kubectl get
// shows: information.
func PartDiffs(old, new *apiextensionsv1.CustomResourceDefinitionVersion) []PartDiff {
	var out []PartDiff
	add := func(code string, sev Severity, path, format string, args ...any) {
		out = append(out, PartDiff{Code: code, Severity: sev, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	os, ns := old.Subresources, new.Subresources
	oldStatus, newStatus := os != nil && os.Status != nil, ns != nil && ns.Status != nil
	switch {
	case oldStatus && !newStatus:
		add(CodeStatusSubresourceRemoved, SeverityWarning, "subresources.status",
			"%s has no status subresource (%s has): writes to /status are answered 404, and writes to the main resource change status", new.Name, old.Name)
	case !oldStatus && newStatus:
		add(CodeStatusSubresourceAdded, SeverityInfo, "subresources.status",
			"%s has the status subresource (%s has not): the main resource ignores changes to status", new.Name, old.Name)
	}
	var oldScale, newScale *apiextensionsv1.CustomResourceSubresourceScale
	if os != nil {
		oldScale = os.Scale
	}
	if ns != nil {
		newScale = ns.Scale
	}
	switch {
	case oldScale != nil && newScale == nil:
		add(CodeScaleSubresourceRemoved, SeverityWarning, "subresources.scale",
			"%s has no scale subresource (%s has): kubectl scale and HorizontalPodAutoscalers that use it fail", new.Name, old.Name)
	case oldScale == nil && newScale != nil:
		add(CodeScaleSubresourceAdded, SeverityInfo, "subresources.scale", "%s has the scale subresource (%s has not)", new.Name, old.Name)
	case oldScale != nil && !equality.Semantic.DeepEqual(oldScale, newScale):
		add(CodeScaleSubresourceChanged, SeverityWarning, "subresources.scale",
			"the scale subresource reads other paths at %s than at %s (%s → %s)", new.Name, old.Name, scalePaths(oldScale), scalePaths(newScale))
	}
	if !equality.Semantic.DeepEqual(old.AdditionalPrinterColumns, new.AdditionalPrinterColumns) {
		add(CodePrinterColumnsChanged, SeverityInfo, "additionalPrinterColumns",
			"kubectl get shows other columns at %s (%s) than at %s (%s)", new.Name, columnNames(new.AdditionalPrinterColumns), old.Name, columnNames(old.AdditionalPrinterColumns))
	}
	return out
}

func scalePaths(s *apiextensionsv1.CustomResourceSubresourceScale) string {
	label := "-"
	if s.LabelSelectorPath != nil {
		label = *s.LabelSelectorPath
	}
	return fmt.Sprintf("spec %s, status %s, selector %s", s.SpecReplicasPath, s.StatusReplicasPath, label)
}

func columnNames(cs []apiextensionsv1.CustomResourceColumnDefinition) string {
	if len(cs) == 0 {
		return "the default NAME and AGE"
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// partFindings are, for each served version other than the storage
// version that is not deprecated, the subresources it lacks or serves
// differently from the storage version (PartDiffs' warnings): once clients
// or controllers use it — as kubectl's default version, or after
// promote-storage — /status and /scale fail there. A deprecated version
// is on its way out, and clients are told to leave it already (Gateway
// API's GRPCRoute v1alpha2 has no status subresource). The codes are
// PartDiffs'.
func partFindings(crd *apiextensionsv1.CustomResourceDefinition, a Analysis) []Finding {
	storage := FindVersion(crd, a.StorageVersion)
	if storage == nil {
		return nil
	}
	var out []Finding
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served || v.Deprecated || v.Name == storage.Name {
			continue
		}
		for _, d := range PartDiffs(storage, v) {
			if d.Severity != SeverityWarning {
				continue
			}
			out = append(out, Finding{Code: d.Code, Severity: SeverityWarning, Version: v.Name,
				Message: d.Message + " (storage version " + storage.Name + ")",
				Fix:     fmt.Sprintf("give %s the %s of %s (the edit add-version --from %s makes)", v.Name, d.Path, storage.Name, storage.Name)})
		}
	}
	return out
}
