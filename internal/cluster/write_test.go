package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestWhenServed: a list answered 404 (a version not served yet) is
// retried until it is answered otherwise or the backoff is spent; other
// answers end it at once.
func TestWhenServed(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"}, "")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"}, "", nil)
	saved := NotYetServed
	defer func() { NotYetServed = saved }()
	NotYetServed = wait.Backoff{Duration: 1, Steps: 4}
	for _, tc := range []struct {
		name    string
		answers []error
		calls   int
		err     error
	}{
		{"served at once", nil, 1, nil},
		{"served after two 404s", []error{notFound, notFound}, 3, nil},
		{"never served", []error{notFound, notFound, notFound, notFound, notFound}, 4, notFound},
		{"forbidden", []error{forbidden}, 1, forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := WhenServed(context.Background(), func() error {
				calls++
				if calls <= len(tc.answers) {
					return tc.answers[calls-1]
				}
				return nil
			})
			if calls != tc.calls || err != tc.err {
				t.Errorf("%d calls, error %v; want %d, %v", calls, err, tc.calls, tc.err)
			}
		})
	}
}

// TestNotServedYet: an answer that contradicts the CRD as read — 404 while
// it is established, an object "stored at an invalid group/version" whose
// version the CRD has — means the API server has not caught up with the
// edit; a version really missing from spec.versions, another group, or a
// CRD that is not established are answers to report.
func TestNotServedYet(t *testing.T) {
	crontabs := crdtest.New("crontabs.orphan.example.com").Version("v1").Version("v2")
	crd := crontabs.CRD()
	notEstablished := crontabs.Condition(apiextensionsv1.Established, apiextensionsv1.ConditionFalse).CRD()
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "orphan.example.com", Resource: "crontabs"}, "")
	stale := func(gv string) error {
		return apierrors.NewInternalError(fmt.Errorf("failed to read one or more crontabs.orphan.example.com from the storage: StorageError: corrupt object, Code: 6, Key: /registry/orphan.example.com/crontabs/ns/c1, ResourceVersion: 0, AdditionalErrorMsg: request to convert CR from an invalid group/version: %s", gv))
	}
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		err  error
		want bool
	}{
		{"nil", crd, nil, false},
		{"404", crd, notFound, true},
		{"404, not established", notEstablished, notFound, false},
		{"a restored version", crd, stale("orphan.example.com/v1"), true},
		{"a version really gone", crd, stale("orphan.example.com/v0"), false},
		{"another group", crd, stale("other.example.com/v1"), false},
		{"webhook", crd, errors.New("conversion webhook for orphan.example.com/v1, Kind=CronTab failed"), false},
	} {
		if got := NotServedYet(tc.crd, tc.err); got != tc.want {
			t.Errorf("%s: NotServedYet = %v, want %v", tc.name, got, tc.want)
		}
	}
}
