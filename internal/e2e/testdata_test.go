package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
)

// installTestdata creates the CRDs and objects of the given paths under
// testdata/ and deletes the CRDs when the test ends, waiting until they
// are gone.
func installTestdata(t *testing.T, c clients, paths ...string) *fixture.Result {
	t.Helper()
	res, err := fixture.Apply(context.Background(), srv.Config, readTestdata(t, paths...))
	if res != nil {
		for _, crd := range res.CRDs {
			name := crd.Name
			// These CRDs have their real names, which the next test
			// to install them needs free: wait until they are gone.
			t.Cleanup(func() {
				if conditions, err := deleteCRDAndWait(context.Background(), c, name, 2*time.Minute); err != nil {
					t.Errorf("deleting CRD %s: %v (conditions %+v)", name, err, conditions)
				}
			})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readTestdata reads the objects of the given paths under testdata/.
func readTestdata(t *testing.T, paths ...string) []*unstructured.Unstructured {
	t.Helper()
	var abs []string
	for _, p := range paths {
		abs = append(abs, filepath.Join(repoRoot, "testdata", p))
	}
	objs, err := fixture.Read(abs...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
