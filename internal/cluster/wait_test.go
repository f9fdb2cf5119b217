package cluster

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// discoveryAt answers ServerResourcesForGroupVersion with one resource,
// crontabs, whose storageVersionHash is hash: an API server instance's
// discovery as its CRD informer last saw the CRD.
type discoveryAt struct {
	discovery.DiscoveryInterface
	hash string
	// gone is a group version discovery no longer has (unserved).
	gone string
}

func (d discoveryAt) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if gv == d.gone {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "crontabs", Kind: "CronTab", StorageVersionHash: d.hash}}}, nil
}

// TestWaitServedStorageVersion: after a change of the storage version,
// WaitServed and WaitStorageVersion (their check, servedCheck) wait until
// discovery gives the resource the storageVersionHash of the new storage
// version — the API server's sign that it took the CRD in — and report what
// they wait for while discovery still gives the old one, or none (it last
// saw a storage version that is not served), or does not list the storage
// version of an established CRD; after a change to a storage version that
// is not served, until it gives none. A CRD not established, which
// discovery does not list, does not hold WaitStorageVersion up; WaitServed
// still waits for the CRD to be established. A discovery stub stands for
// an instance that lags, which cannot be made on demand; the hash itself is
// compared with a real API server's in the e2e test
// TestStorageVersionHashOfDiscovery. WaitServed also waits until a version
// that is not served leaves discovery (case 35).
func TestWaitServedStorageVersion(t *testing.T) {
	crd := func(storageServed, established bool) *apiextensionsv1.CustomResourceDefinition {
		status := apiextensionsv1.ConditionTrue
		if !established {
			status = apiextensionsv1.ConditionFalse
		}
		served := func(v *apiextensionsv1.CustomResourceDefinitionVersion) { v.Served = storageServed }
		return crdtest.New("crontabs.stable.example.com").Kind("CronTab").
			Version("v1", crdtest.Served).Version("v2", served, crdtest.Storage).
			Condition(apiextensionsv1.Established, status).CRD()
	}
	v1, v2 := StorageVersionHash("stable.example.com", "v1", "CronTab"), StorageVersionHash("stable.example.com", "v2", "CronTab")
	stale := "to give the storageVersionHash of the storage version v2 (" + v2 + ", not " + v1 + ")"
	nohash := "to give the storageVersionHash of the storage version v2 (" + v2 + ", not none)"
	unserved := "to give the storageVersionHash of a storage version that is not served, v2 (none, not " + v1 + ")"
	for _, tc := range []struct {
		name                    string
		storageServed, estab    bool
		discovery               discovery.DiscoveryInterface
		wantServed, wantStorage string
	}{
		{"discovery names the new storage version", true, true, discoveryAt{hash: v2}, "", ""},
		{"discovery still names the old one", true, true, discoveryAt{hash: v1}, stale, stale},
		{"discovery gives no hash: it last saw an unserved storage version", true, true, discoveryAt{hash: ""}, nohash, nohash},
		{"established, not listed yet", true, true, notListed{}, "discovery of stable.example.com/v1", "discovery of stable.example.com/v2, the storage version"},
		{"the storage version is not served", false, true, discoveryAt{hash: "", gone: "stable.example.com/v2"}, "", ""},
		{"the storage version is not served, discovery still gives a hash", false, true, discoveryAt{hash: v1, gone: "stable.example.com/v2"}, unserved, unserved},
		{"the storage version is not served, discovery still lists it", false, true, discoveryAt{hash: ""},
			"crontabs to leave discovery of stable.example.com/v2, which is not served", ""},
		{"not established, not listed", true, false, notListed{}, "conditions [", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range []struct {
				name   string
				served bool
				want   string
			}{{"WaitServed", true, tc.wantServed}, {"WaitStorageVersion", false, tc.wantStorage}} {
				done, waitingFor := servedCheck(crd(tc.storageServed, tc.estab), tc.discovery, w.served)
				switch {
				case w.want == "" && !done:
					t.Errorf("%s waits for %s, want done", w.name, waitingFor)
				case w.want != "" && (done || !strings.Contains(waitingFor, w.want)):
					t.Errorf("%s: done %v, waiting for %q; want it waiting for %q", w.name, done, waitingFor, w.want)
				}
			}
		})
	}
}

// notListed is the discovery of a CRD that is not established: its group
// version is not found.
type notListed struct{ discovery.DiscoveryInterface }

func (notListed) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
}
