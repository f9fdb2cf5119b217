package cluster

import (
	"context"
	"errors"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
)

// ReachOf classifies the error of reading one cluster of a fleet run: nil
// is fleet.Reached; a *NotACRDError or a 404 is fleet.NotInstalled; a 401
// or 403 is fleet.Forbidden; a deadline, a network error or a failed
// request (*url.Error: refused, TLS, DNS) is fleet.Unreachable; anything
// else is fleet.Failed.
func ReachOf(err error) fleet.Reach {
	var notCRD *NotACRDError
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case err == nil:
		return fleet.Reached
	case errors.As(err, &notCRD), apierrors.IsNotFound(err):
		return fleet.NotInstalled
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return fleet.Forbidden
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr), errors.As(err, &urlErr):
		return fleet.Unreachable
	}
	return fleet.Failed
}

// CheckReach is how a fleet run reports the error of one cluster's check
// (doctor, check-upgrade): its Reach (see ReachOf) and its message, with
// fleet.Reached and "" for nil. A cluster without the CRDs that could still
// not be checked is fleet.Failed, not fleet.NotInstalled.
func CheckReach(err error) (fleet.Reach, string) {
	if err == nil {
		return fleet.Reached, ""
	}
	reach := ReachOf(err)
	if reach == fleet.NotInstalled {
		reach = fleet.Failed
	}
	return reach, err.Error()
}
