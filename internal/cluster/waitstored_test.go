package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestWaitStoredRead: after a write that restores a version objects are
// stored at (in spec.versions and status.storedVersions, not served),
// discovery does not change, and the API server's handler may still be the
// one built without the version: a list of the objects is answered
// "invalid group/version" for a moment. WaitStoredRead lists until that
// stops, and says so when it does not within its time; a CRD without such
// a version costs no request. A list stub stands for the lagging handler,
// which cannot be made on demand; the e2e test
// TestStatusStoredVersionMissingFromSpec runs the repair on a real API
// server.
func TestWaitStoredRead(t *testing.T) {
	crd := func(v1Served bool) *apiextensionsv1.CustomResourceDefinition {
		v1 := []crdtest.VersionOption{}
		if v1Served {
			v1 = append(v1, crdtest.Served)
		}
		return crdtest.New("crontabs.stable.example.com").Version("v1", v1...).
			Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	}
	stale := apierrors.NewInternalError(fmt.Errorf("request to convert CR from an invalid group/version: stable.example.com/v1"))
	for _, tc := range []struct {
		name      string
		v1Served  bool
		staleFor  int // lists answered stale before one succeeds
		wantLists int
		wantErr   string
	}{
		{name: "every stored version served: no list", v1Served: true, wantLists: 0},
		{name: "caught up at once", wantLists: 1},
		{name: "caught up after two stale answers", staleFor: 2, wantLists: 3},
		{name: "never caught up", staleFor: 1 << 30, wantErr: "does not read the objects of CustomResourceDefinition crontabs.stable.example.com stored at every version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := metadatafake.NewSimpleMetadataClient(runtime.NewScheme())
			var lists atomic.Int64
			md.PrependReactor("list", "crontabs", func(clienttesting.Action) (bool, runtime.Object, error) {
				if n := lists.Add(1); n <= int64(tc.staleFor) {
					return true, nil, stale
				}
				return true, &metav1.PartialObjectMetadataList{}, nil
			})
			c := &Client{CRDs: extfake.NewSimpleClientset(crd(tc.v1Served)).ApiextensionsV1().CustomResourceDefinitions(), Metadata: md}
			err := c.WaitStoredRead(context.Background(), "crontabs.stable.example.com", time.Second)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			}
			if tc.wantErr == "" && lists.Load() != int64(tc.wantLists) {
				t.Errorf("%d lists, want %d", lists.Load(), tc.wantLists)
			}
		})
	}
}
