package cluster

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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
