package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/reach"
)

func TestReachOf(t *testing.T) {
	crds := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	for _, tc := range []struct {
		name  string
		err   error
		reach reach.Reach
		check reach.Reach // CheckReach's
	}{
		{"nil", nil, reach.Reached, reach.Reached},
		{"not a CRD", fmt.Errorf("reading: %w", &NotACRDError{Arg: "ct"}), reach.NotInstalled, reach.Failed},
		{"404", apierrors.NewNotFound(crds, "crontabs.stable.example.com"), reach.NotInstalled, reach.Failed},
		{"403", apierrors.NewForbidden(crds, "", errors.New("no")), reach.Forbidden, reach.Forbidden},
		{"401", apierrors.NewUnauthorized("who"), reach.Forbidden, reach.Forbidden},
		{"deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), reach.Unreachable, reach.Unreachable},
		{"refused", &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: syscall.ECONNREFUSED}, reach.Unreachable, reach.Unreachable},
		{"500", apierrors.NewInternalError(errors.New("boom")), reach.Failed, reach.Failed},
		{"other", errors.New("odd"), reach.Failed, reach.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReachOf(tc.err); got != tc.reach {
				t.Errorf("ReachOf: %s, want %s", got, tc.reach)
			}
			got, msg := CheckReach(tc.err)
			if got != tc.check {
				t.Errorf("CheckReach: %s, want %s", got, tc.check)
			}
			if want := ""; tc.err != nil {
				want = tc.err.Error()
				if msg != want {
					t.Errorf("CheckReach message %q, want %q", msg, want)
				}
			} else if msg != want {
				t.Errorf("CheckReach message %q, want none", msg)
			}
		})
	}
}
