package cluster

import (
	"context"
	"slices"
	"testing"

	extfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestUpdateCRDCarriesTheDryRunToTheRequest: the lifecycle.DryRun the
// command converted from --dry-run reaches the update request unchanged:
// dryRun=All for a server dry run, no dryRun for a real write, and no
// request at all for a client dry run.
func TestUpdateCRDCarriesTheDryRunToTheRequest(t *testing.T) {
	for _, tc := range []struct {
		dryRun lifecycle.DryRun
		want   [][]string // the DryRun of each update request sent
	}{
		{lifecycle.DryRunNone, [][]string{nil}},
		{lifecycle.DryRunServer, [][]string{{metav1.DryRunAll}}},
		{lifecycle.DryRunClient, nil},
	} {
		t.Run(tc.dryRun.String(), func(t *testing.T) {
			crd := crdtest.New("crontabs.stable.example.com").CRD()
			cs := extfake.NewSimpleClientset(crd.DeepCopy())
			var sent [][]string
			cs.PrependReactor("update", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
				sent = append(sent, a.(clienttesting.UpdateActionImpl).UpdateOptions.DryRun)
				return false, nil, nil
			})
			c := &Client{CRDs: cs.ApiextensionsV1().CustomResourceDefinitions()}
			_, err := c.UpdateCRD(context.Background(), crd, WriteOptions{DryRun: tc.dryRun, FieldManager: "m"})
			if (err != nil) != (tc.dryRun == lifecycle.DryRunClient) {
				t.Errorf("error %v", err)
			}
			if !slices.EqualFunc(sent, tc.want, slices.Equal) {
				t.Errorf("requests sent with dryRun %q, want %q", sent, tc.want)
			}
		})
	}
}
