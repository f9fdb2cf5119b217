package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// WaitServed waits until discovery gives the resource the storageVersionHash
// of the new storage version — the API server's sign that it took the CRD
// in — and times out naming what it waited for while discovery still gives
// the old one. No hash (an unserved storage version, an older server)
// cannot tell and does not hold it up. (The hash itself is compared with a
// real API server's in the e2e test TestStorageVersionHashOfDiscovery.)
func TestWaitServedStorageVersion(t *testing.T) {
	crd := func(storageServed bool) *apiextensionsv1.CustomResourceDefinition {
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
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
		}
	}
	v1, v2 := StorageVersionHash("stable.example.com", "v1", "CronTab"), StorageVersionHash("stable.example.com", "v2", "CronTab")
	for _, tc := range []struct {
		name          string
		storageServed bool
		discovered    string
		wantErr       string
	}{
		{"discovery names the new storage version", true, v2, ""},
		{"discovery still names the old one", true, v1, "to name the storage version v2 (storageVersionHash " + v2 + ", not " + v1 + ")"},
		{"discovery gives no hash", true, "", ""},
		{"the storage version is not served", false, v1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crds := apiextensionsfake.NewSimpleClientset(crd(tc.storageServed)).ApiextensionsV1().CustomResourceDefinitions()
			err := WaitServed(context.Background(), crds, discoveryAt{hash: tc.discovered}, "crontabs.stable.example.com", 300*time.Millisecond)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("WaitServed: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("WaitServed: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
