package schemadiff

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Codes of the findings on a version's subresources and printer columns.
const (
	CodeStatusSubresourceRemoved = "StatusSubresourceRemoved"
	CodeStatusSubresourceAdded   = "StatusSubresourceAdded"
	CodeScaleSubresourceRemoved  = "ScaleSubresourceRemoved"
	CodeScaleSubresourceAdded    = "ScaleSubresourceAdded"
	CodeScaleSubresourceChanged  = "ScaleSubresourceChanged"
	CodePrinterColumnsChanged    = "PrinterColumnsChanged"
)

// VersionParts compares what a version serves besides its schema — the
// status and scale subresources and the additionalPrinterColumns — between
// old and new (two versions of one CRD, or one version in two manifests).
// A subresource removed is a warning: on a version without the status
// subresource, writes to /status are answered 404 and the main resource
// accepts status changes (the API server ignores status on the main
// resource only while the subresource is enabled); without scale, kubectl
// scale and HorizontalPodAutoscalers fail. Printer columns are what kubectl
// get shows: an info.
func VersionParts(old, new *apiextensionsv1.CustomResourceDefinitionVersion) []Finding {
	var out []Finding
	add := func(code string, sev lifecycle.Severity, path, format string, args ...any) {
		out = append(out, Finding{Code: code, Severity: sev, Version: new.Name, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	os, ns := old.Subresources, new.Subresources
	oldStatus, newStatus := os != nil && os.Status != nil, ns != nil && ns.Status != nil
	switch {
	case oldStatus && !newStatus:
		add(CodeStatusSubresourceRemoved, lifecycle.SeverityWarning, "subresources.status",
			"%s has no status subresource (%s has): writes to /status are answered 404, and writes to the main resource change status", new.Name, old.Name)
	case !oldStatus && newStatus:
		add(CodeStatusSubresourceAdded, lifecycle.SeverityInfo, "subresources.status",
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
		add(CodeScaleSubresourceRemoved, lifecycle.SeverityWarning, "subresources.scale",
			"%s has no scale subresource (%s has): kubectl scale and HorizontalPodAutoscalers that use it fail", new.Name, old.Name)
	case oldScale == nil && newScale != nil:
		add(CodeScaleSubresourceAdded, lifecycle.SeverityInfo, "subresources.scale", "%s has the scale subresource (%s has not)", new.Name, old.Name)
	case oldScale != nil && !equality.Semantic.DeepEqual(oldScale, newScale):
		add(CodeScaleSubresourceChanged, lifecycle.SeverityWarning, "subresources.scale",
			"the scale subresource reads other paths at %s than at %s (%s → %s)", new.Name, old.Name, scalePaths(oldScale), scalePaths(newScale))
	}
	if !equality.Semantic.DeepEqual(old.AdditionalPrinterColumns, new.AdditionalPrinterColumns) {
		add(CodePrinterColumnsChanged, lifecycle.SeverityInfo, "additionalPrinterColumns",
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
