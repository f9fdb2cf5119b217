package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// discoveryAt answers ServerResourcesForGroupVersion with one resource,
// crontabs, whose storageVersionHash is hash: an API server instance's
// discovery as its CRD informer last saw the CRD.
type discoveryAt struct {
	discovery.DiscoveryInterface
	hash string
}

func (d discoveryAt) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "crontabs", Kind: "CronTab", StorageVersionHash: d.hash}}}, nil
}

// TestWaitServedStorageVersion: after a change of the storage version,
// WaitServed and WaitStorageVersion wait until discovery gives the resource
// the storageVersionHash of the new storage version — the API server's sign
// that it took the CRD in — and time out naming what they waited for while
// discovery still gives the old one. What discovery does not show (no hash:
// an unserved storage version, an older server; a CRD not established,
// which discovery does not list) does not hold WaitStorageVersion up;
// WaitServed still waits for the CRD to be established. (The hash itself is
// compared with a real API server's in the e2e test
// TestStorageVersionHashOfDiscovery.)
func TestWaitServedStorageVersion(t *testing.T) {
	crd := func(storageServed, established bool) *apiextensionsv1.CustomResourceDefinition {
		status := apiextensionsv1.ConditionTrue
		if !established {
			status = apiextensionsv1.ConditionFalse
		}
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "crontabs.stable.example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "stable.example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", Kind: "CronTab"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
					{Name: "v1", Served: true},
					{Name: "v2", Served: storageServed, Storage: true},
				},
			},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: status}}},
		}
	}
	v1, v2 := StorageVersionHash("stable.example.com", "v1", "CronTab"), StorageVersionHash("stable.example.com", "v2", "CronTab")
	stale := "to name the storage version v2 (storageVersionHash " + v2 + ", not " + v1 + ")"
	for _, tc := range []struct {
		name                    string
		storageServed, estab    bool
		discovery               discovery.DiscoveryInterface
		wantServed, wantStorage string
	}{
		{"discovery names the new storage version", true, true, discoveryAt{hash: v2}, "", ""},
		{"discovery still names the old one", true, true, discoveryAt{hash: v1}, stale, stale},
		{"discovery gives no hash", true, true, discoveryAt{hash: ""}, "", ""},
		{"the storage version is not served", false, true, discoveryAt{hash: v1}, "", ""},
		{"not established, not listed", true, false, notListed{}, "to be served (conditions", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range []struct {
				wait func(context.Context, apiextensionsclient.CustomResourceDefinitionInterface, discovery.DiscoveryInterface, string, time.Duration) error
				name string
				want string
			}{{WaitServed, "WaitServed", tc.wantServed}, {WaitStorageVersion, "WaitStorageVersion", tc.wantStorage}} {
				crds := apiextensionsfake.NewSimpleClientset(crd(tc.storageServed, tc.estab)).ApiextensionsV1().CustomResourceDefinitions()
				err := w.wait(context.Background(), crds, tc.discovery, "crontabs.stable.example.com", 300*time.Millisecond)
				switch {
				case w.want == "" && err != nil:
					t.Errorf("%s: %v, want nil", w.name, err)
				case w.want != "" && (err == nil || !strings.Contains(err.Error(), w.want)):
					t.Errorf("%s: %v, want an error containing %q", w.name, err, w.want)
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
