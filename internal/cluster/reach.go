package cluster

import (
	"context"
	"errors"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdversion/kubectl-crdversion/internal/reach"
)

// ReachOf classifies the error of reading one cluster of a fleet run: nil
// is reach.Reached; a *NotACRDError or a 404 is reach.NotInstalled; a 401
// or 403 is reach.Forbidden; a deadline, a network error or a failed
// request (*url.Error: refused, TLS, DNS) is reach.Unreachable; anything
// else is reach.Failed.
func ReachOf(err error) reach.Reach {
	var notCRD *NotACRDError
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case err == nil:
		return reach.Reached
	case errors.As(err, &notCRD), apierrors.IsNotFound(err):
		return reach.NotInstalled
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return reach.Forbidden
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr), errors.As(err, &urlErr):
		return reach.Unreachable
	}
	return reach.Failed
}

// CheckReach is how a fleet run reports the error of one cluster's check
// (doctor, check-upgrade): its Reach (see ReachOf) and its message, with
// reach.Reached and "" for nil. A cluster without the CRDs that could still
// not be checked is reach.Failed, not reach.NotInstalled.
func CheckReach(err error) (reach.Reach, string) {
	if err == nil {
		return reach.Reached, ""
	}
	r := ReachOf(err)
	if r == reach.NotInstalled {
		r = reach.Failed
	}
	return r, err.Error()
}
