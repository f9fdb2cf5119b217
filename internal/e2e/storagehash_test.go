package e2e

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
)

// TestStorageVersionHashOfDiscovery compares the tool's StorageVersionHash
// with the storageVersionHash the API server's discovery gives each served
// version of a CRD, before and after changes of the storage version (to a
// served one, to one not served, and back): the
// differential check of what cluster.WaitServed (every CRD write's wait,
// and migrate's before it writes) waits for. updateCRD waits through
// WaitServed, so a wrong hash would time out there.
func TestStorageVersionHashOfDiscovery(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("storagehash.example.com", apiextensionsv1.NamespaceScoped))
	want := func(storage string, versions ...string) {
		t.Helper()
		hash := "" // the storage version is not served: discovery gives no hash
		if storage != "" {
			hash = cluster.StorageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind)
		}
		for _, v := range versions {
			list, err := c.ext.Discovery().ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					found = true
					if r.StorageVersionHash != hash {
						t.Errorf("discovery of %s/%s: storageVersionHash %q; the tool computes %q for storage version %s", crd.Spec.Group, v, r.StorageVersionHash, hash, storage)
					}
				}
			}
			if !found {
				t.Errorf("discovery of %s/%s lists no %s", crd.Spec.Group, v, crd.Spec.Names.Plural)
			}
		}
	}
	want("v1", "v1")
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	})
	want("v1", "v1", "v2")
	setStorage(t, c, crd.Name, "v2")
	want("v2", "v1", "v2")
	// Storage back at v1, which is not served: no hash. Then storage at v2:
	// an instance that has not taken that in still gives none, which is
	// why the wait takes a missing hash as "not yet".
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			v.Storage, v.Served = v.Name == "v1", v.Name != "v1"
		}
	})
	want("", "v2")
	setStorage(t, c, crd.Name, "v2")
	want("v2", "v2")
}
