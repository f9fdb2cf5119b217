package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// WaitServed polls every 50 ms, for up to timeout, until the CRD has the
// condition Established and each of its served versions lists the resource
// in discovery — the point from which clients can use those versions — with
// the storageVersionHash of the CRD's storage version, or none when that
// is not served (see WaitStorageVersion), and no version of it that is not
// served lists the resource any more (after an unserve: the point from
// which a client that asks discovery afresh no longer finds it; case 35).
// On timeout the error says what was still missing.
func WaitServed(ctx context.Context, crds apiextensionsclient.CustomResourceDefinitionInterface, disc discovery.DiscoveryInterface, name string, timeout time.Duration) error {
	return poll(ctx, crds, disc, name, timeout, true)
}

// WaitStorageVersion polls every 50 ms, for up to timeout, until discovery
// gives each listed served version of the CRD the storageVersionHash of the
// CRD's storage version (StorageVersionHash), or none when the storage
// version is not served, and, when the CRD is established and its storage
// version served, lists the storage version. The API server's discovery is
// built from the same CRD informer as the handler that encodes the objects,
// so the hash is how a client can tell that the instance answering has
// taken a change of the storage version in: before that, a write goes
// through the old handler and is stored at the old version (and a no-op
// write is not written at all). A CRD that is not established is not
// listed, and cannot hold it up. On timeout the error says what discovery
// still gave.
func WaitStorageVersion(ctx context.Context, crds apiextensionsclient.CustomResourceDefinitionInterface, disc discovery.DiscoveryInterface, name string, timeout time.Duration) error {
	return poll(ctx, crds, disc, name, timeout, false)
}

// poll is WaitServed (served) or WaitStorageVersion: it re-reads the CRD
// and asks discovery until servedCheck says it is done.
func poll(ctx context.Context, crds apiextensionsclient.CustomResourceDefinitionInterface, disc discovery.DiscoveryInterface, name string, timeout time.Duration, served bool) error {
	var waitingFor string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				// The time is up while the read waited (client-side rate
				// limit): that is a timeout, said below.
				return false, nil
			}
			return false, err
		}
		var done bool
		done, waitingFor = servedCheck(crd, disc, served)
		return done, nil
	})
	if err == nil {
		return nil
	}
	what := "served"
	if !served {
		what = "served at its storage version"
	}
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("CustomResourceDefinition %s was not %s within %s: waiting for %s", name, what, timeout, waitingFor)
	}
	return fmt.Errorf("waiting for CustomResourceDefinition %s to be %s (%s): %w", name, what, waitingFor, err)
}

// servedCheck tells whether disc shows crd as WaitServed (served: the CRD
// established, every served version listed, each with the storage
// version's hash) or WaitStorageVersion (each listed version with that
// hash; the storage version listed when the CRD is established) wants it,
// and otherwise what it is waiting for.
func servedCheck(crd *apiextensionsv1.CustomResourceDefinition, disc discovery.DiscoveryInterface, served bool) (done bool, waitingFor string) {
	if served && !establishedTrue(crd) {
		return false, fmt.Sprintf("conditions %v", crd.Status.Conditions)
	}
	hash := storageHashWhenServed(crd)
	for _, v := range crd.Spec.Versions {
		gv := lifecycle.GroupVersion(crd, v.Name)
		if !v.Served {
			if !served {
				continue
			}
			list, err := disc.ServerResourcesForGroupVersion(gv)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return false, fmt.Sprintf("discovery of %s, which is not served: %v", gv, err)
			case slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }):
				return false, fmt.Sprintf("%s to leave discovery of %s, which is not served", crd.Spec.Names.Plural, gv)
			}
			continue
		}
		list, err := disc.ServerResourcesForGroupVersion(gv)
		var found *metav1.APIResource
		if err == nil {
			for i, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					found = &list.APIResources[i]
				}
			}
		}
		switch {
		case err != nil && served:
			return false, fmt.Sprintf("discovery of %s: %v", gv, err)
		case found == nil && served:
			return false, fmt.Sprintf("%s in discovery of %s", crd.Spec.Names.Plural, gv)
		case found != nil && found.StorageVersionHash != hash:
			return false, fmt.Sprintf("discovery of %s to give the storageVersionHash of %s (%s, not %s)", gv, storageNamed(crd, hash), orNone(hash), orNone(found.StorageVersionHash))
		case found == nil && v.Storage && hash != "" && establishedTrue(crd):
			if err != nil {
				return false, fmt.Sprintf("discovery of %s, the storage version: %v", gv, err)
			}
			return false, fmt.Sprintf("%s in discovery of %s, the storage version", crd.Spec.Names.Plural, gv)
		}
	}
	return true, ""
}

// establishedTrue reports whether crd has the condition Established True.
func establishedTrue(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// StorageVersionHash is the storageVersionHash that an API server's
// discovery gives a resource whose objects are stored at group/version as
// kind: the first 8 bytes of the SHA-256 of "group/version/kind", in
// standard base64 (k8s.io/apiserver's discovery.StorageVersionHash; that
// package is not imported for it, it brings in the server's tracing and
// CEL). An e2e test compares it with what the API server serves.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// storageNamed names the storage version whose hash discovery should give.
func storageNamed(crd *apiextensionsv1.CustomResourceDefinition, hash string) string {
	if hash == "" {
		return "a storage version that is not served, " + lifecycle.StorageVersion(crd)
	}
	return "the storage version " + lifecycle.StorageVersion(crd)
}

// orNone is hash, or "none" when it is empty.
func orNone(hash string) string {
	if hash == "" {
		return "none"
	}
	return hash
}

// storageHashWhenServed is the StorageVersionHash of crd's storage version
// when that version is served ("" when it is not: the API server's
// discovery then gives no hash). Like the API server, it takes the kind
// from spec.names.
func storageHashWhenServed(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Served {
			return StorageVersionHash(crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
		}
	}
	return ""
}

// WaitStorageVersion waits until discovery names the CRD's storage
// version; see the package function.
func (c *Client) WaitStorageVersion(ctx context.Context, name string, timeout time.Duration) error {
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return err
	}
	return WaitStorageVersion(ctx, c.CRDs, disc, name, timeout)
}

// WaitServed waits until the CRD's served versions are in discovery; see
// the package function. When objects may be stored at a version that
// discovery cannot show — in spec.versions and status.storedVersions but
// not served, as after add-version restores it — it then also waits,
// within timeout, until the API server reads the objects (WaitStoredRead):
// discovery does not change when such a version comes back, so it cannot
// tell when the handler of the objects has it.
func (c *Client) WaitServed(ctx context.Context, name string, timeout time.Duration) error {
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := WaitServed(ctx, c.CRDs, disc, name, timeout); err != nil {
		return err
	}
	return c.WaitStoredRead(ctx, name, timeout-time.Since(start))
}

// WaitStoredRead waits, for up to timeout, until a list of the objects of
// the CRD named name is no longer answered as by an API server that lacks
// a version the CRD has in spec.versions ("invalid group/version", see
// StaleVersion), when objects may be stored at a version that is not
// served (in spec.versions and status.storedVersions): right after a
// write that restores such a version, the handler that decodes the
// objects may still be the one built without it, and a migrate sent then
// would fail. Other CRDs cost nothing; any other answer of the list (a
// forbidden one, say) says nothing about it and is not an error.
func (c *Client) WaitStoredRead(ctx context.Context, name string, timeout time.Duration) error {
	crd, err := c.CRDs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	version := lifecycle.ListVersion(crd)
	if version == "" || !storedUnserved(crd) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, max(timeout, time.Second))
	defer cancel()
	err = WhenServedBy(ctx, crd, func() error {
		return c.EachObject(ctx, crd, version, ChunkSize, func(string, string) error { return nil })
	})
	if StaleVersion(crd, err) {
		return fmt.Errorf("the API server does not read the objects of CustomResourceDefinition %s stored at every version it has yet: %w", name, err)
	}
	return nil
}

// storedUnserved tells whether crd has a version in spec.versions and
// status.storedVersions that it does not serve.
func storedUnserved(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, v := range crd.Spec.Versions {
		if !v.Served && slices.Contains(crd.Status.StoredVersions, v.Name) {
			return true
		}
	}
	return false
}

// ServedVersions returns the versions of the API group that the cluster
// serves, from discovery (/apis), preferred first; none when it does not
// serve the group.
func (c *Client) ServedVersions(group string) ([]string, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return nil, err
	}
	groups, err := disc.ServerGroups()
	if err != nil {
		return nil, err
	}
	for _, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		var out []string
		if g.PreferredVersion.Version != "" {
			out = append(out, g.PreferredVersion.Version)
		}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				out = append(out, v.Version)
			}
		}
		return out, nil
	}
	return nil, nil
}
