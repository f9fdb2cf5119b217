// Package action runs the lifecycle steps that edit spec.versions —
// add-version, promote-storage, deprecate, serve and unserve — and reports
// where a CRD stands (status), the way helm's pkg/action runs its
// operations: each step in one file, from reading the CRD through its
// preflight (the rules of package edit plus the checks of package preflight
// that need the cluster) to the write. Commands in internal/cli turn flags
// into the inputs here and print the results; nothing here prints.
//
// Every write is pinned to the resourceVersion its preflight read (see
// cluster.Client.UpdateCRD): a concurrent change fails the step instead of
// being overwritten.
package action

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Reader reads CRDs.
type Reader interface {
	// ResolveCRD finds the CRD that arg names as kubectl names resources
	// (plural, singular, short name or kind, optionally with the group).
	ResolveCRD(ctx context.Context, arg string) (*apiextensionsv1.CustomResourceDefinition, error)
	// GetCRD reads the CRD by its full name.
	GetCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error)
}

// Target is the CRD a step edits: the live one, or one from a manifest
// file (manifest mode, for GitOps), with the live CRD beside it when the
// cluster has it.
type Target struct {
	// CRD is the CRD to edit. In manifest mode its status is the live
	// status (storedVersions) when the cluster has the CRD.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Manifest is true in manifest mode.
	Manifest bool
	// Live is the CRD as the cluster has it; nil in manifest mode when the
	// cluster does not have it or cannot be reached (LiveSkip says why).
	Live     *apiextensionsv1.CustomResourceDefinition
	LiveSkip string
}

// Load returns the live CRD that arg names as the target.
func Load(ctx context.Context, r Reader, arg string) (*Target, error) {
	crd, err := r.ResolveCRD(ctx, arg)
	if err != nil {
		return nil, err
	}
	return &Target{CRD: crd, Live: crd}, nil
}

// LoadManifest returns crd, read from a manifest, as the target, with the
// live CRD of the same name through r (nil: no cluster configured; noCluster
// says why) and its status copied onto the target.
func LoadManifest(ctx context.Context, r Reader, crd *apiextensionsv1.CustomResourceDefinition, noCluster string) *Target {
	t := &Target{CRD: crd, Manifest: true}
	if r == nil {
		t.LiveSkip = "no cluster configured (" + noCluster + ")"
		return t
	}
	live, err := r.GetCRD(ctx, crd.Name)
	switch {
	case err == nil:
		t.Live = live
		crd.Status = live.Status
	case apierrors.IsNotFound(err):
		t.LiveSkip = "the cluster has no CRD " + crd.Name
	default:
		t.LiveSkip = fmt.Sprintf("the cluster is not reachable (%v)", err)
	}
	return t
}

// live reports whether the cluster's view of the target is known: always
// for a live target, in manifest mode when the cluster has the CRD.
func (t *Target) live() bool { return t.Live != nil }
