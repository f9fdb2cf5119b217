package schemadiff

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Codes of the findings on a version's subresources and printer columns
// (lifecycle.PartDiffs').
const (
	CodeStatusSubresourceRemoved = lifecycle.CodeStatusSubresourceRemoved
	CodeStatusSubresourceAdded   = lifecycle.CodeStatusSubresourceAdded
	CodeScaleSubresourceRemoved  = lifecycle.CodeScaleSubresourceRemoved
	CodeScaleSubresourceAdded    = lifecycle.CodeScaleSubresourceAdded
	CodeScaleSubresourceChanged  = lifecycle.CodeScaleSubresourceChanged
	CodePrinterColumnsChanged    = lifecycle.CodePrinterColumnsChanged
)

// VersionParts compares what a version serves besides its schema — the
// status and scale subresources and the additionalPrinterColumns — between
// old and new (two versions of one CRD, or one version in two manifests),
// as findings of new (see lifecycle.PartDiffs for what each means).
func VersionParts(old, new *apiextensionsv1.CustomResourceDefinitionVersion) []Finding {
	var out []Finding
	for _, d := range lifecycle.PartDiffs(old, new) {
		out = append(out, Finding{Code: d.Code, Severity: d.Severity, Version: new.Name, Path: d.Path, Message: d.Message})
	}
	return nameRules(out)
}
