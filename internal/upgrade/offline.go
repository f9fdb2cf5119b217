package upgrade

import (
	"context"
	"errors"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// ErrNoCluster is the answer of Offline to what only a cluster knows: a
// dry run, the objects of a CRD. A count that meets it is unknown.
var ErrNoCluster = errors.New("offline: no cluster to ask")

// Offline is a Cluster without an API server, for a pull request's
// pipeline: the CRDs of the previous release stand for the installed
// ones. What it cannot know is not guessed as a pass:
//
//   - status.storedVersions is the previous manifest's own when it has
//     one (a CRD dumped from a cluster), else taken to be its storage
//     version alone, the least the API server records (a version that
//     was the storage version before it, still listed on a live cluster,
//     is not seen), always with the storage version in it;
//   - there is no server dry run (Checker.Offline marks every plan
//     predicted), and no API server version;
//   - objects cannot be counted: a deletion's or an immutable change's
//     count is unknown, never zero.
//
// With a Helm release, the previous release's templated CRDs (and, for
// rendered manifests, every CRD) carry the ownership label and
// annotations Helm sets on install, and its keep policy as the templates
// set it.
type Offline struct {
	crds map[string]*apiextensionsv1.CustomResourceDefinition
}

// NewOffline returns the Offline cluster of the previous release's CRDs
// old, installed by release (nil: not through Helm).
func NewOffline(old []manifest.CRDDoc, release *HelmRelease) *Offline {
	o := &Offline{crds: map[string]*apiextensionsv1.CustomResourceDefinition{}}
	for _, d := range old {
		c := d.CRD.DeepCopy()
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
		stored := c.Status.StoredVersions
		c.Status = apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: slices.Clone(stored)}
		if v := lifecycle.StorageVersion(c); v != "" && !slices.Contains(c.Status.StoredVersions, v) {
			c.Status.StoredVersions = append(c.Status.StoredVersions, v)
		}
		if release != nil && release.Name != "" && d.HelmOrigin != manifest.HelmCRDsDir {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[ReleaseNameAnnotation], c.Annotations[ReleaseNamespaceAnnotation] = release.Name, release.Namespace
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[ManagedByLabel] = "Helm"
			if Keeps(d.CRD) {
				c.Annotations[ResourcePolicyAnnotation] = KeepPolicy
			}
		}
		o.crds[c.Name] = c
	}
	return o
}

// GetCRD is the previous release's CRD name; NotFound when it had none.
func (o *Offline) GetCRD(_ context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	if c, ok := o.crds[name]; ok {
		return c.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}, name)
}

// ListCRDs is every CRD of the previous release.
func (o *Offline) ListCRDs(context.Context) ([]apiextensionsv1.CustomResourceDefinition, error) {
	out := make([]apiextensionsv1.CustomResourceDefinition, 0, len(o.crds))
	for _, c := range o.crds {
		out = append(out, *c.DeepCopy())
	}
	return out, nil
}

// DryRunUpdateCRD fails with ErrNoCluster.
func (o *Offline) DryRunUpdateCRD(context.Context, *apiextensionsv1.CustomResourceDefinition, func(*apiextensionsv1.CustomResourceDefinition), string) error {
	return ErrNoCluster
}

// DryRunCreateCRD fails with ErrNoCluster.
func (o *Offline) DryRunCreateCRD(context.Context, *apiextensionsv1.CustomResourceDefinition, string) error {
	return ErrNoCluster
}

// ServerVersion is empty: no API server.
func (o *Offline) ServerVersion(context.Context) (string, error) { return "", nil }

// EachObjectMeta fails with ErrNoCluster: the objects are unknown.
func (o *Offline) EachObjectMeta(context.Context, *apiextensionsv1.CustomResourceDefinition, string, int64, func(metav1.Object) error) error {
	return ErrNoCluster
}
