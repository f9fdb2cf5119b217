package migrate

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// storageKey matches the etcd keys that a list's StorageError names.
var storageKey = regexp.MustCompile(`Key: (\S+?),`)

// unreadableObjects returns "namespace/name" of the objects a list error
// says could not be read from storage. The API server (k8s.io/apiserver
// storage/etcd3, a list that met objects it cannot transform or decode —
// typically a conversion webhook failing for them) answers 500 with reason
// StorageReadError and one cause per object whose field is the object's
// etcd key, up to a limit; its message names only the first ("failed to
// read one or more … from the storage: StorageError: corrupt object, …
// Key: <prefix>/<group>/<plural>/<ns>/<name>, … (and N more)"), which is
// what is read when the causes are missing. truncated is true when the
// API server said it stopped collecting them (a cause of type
// FieldValueTooMany).
func unreadableObjects(err error, gvr schema.GroupVersionResource) (names []string, truncated bool) {
	if !apierrors.IsInternalError(err) && !strings.Contains(err.Error(), "StorageError") {
		return nil, false
	}
	marker := "/" + gvr.Group + "/" + gvr.Resource + "/"
	seen := map[string]bool{}
	add := func(key string) {
		if _, rest, ok := strings.Cut(key, marker); ok && !seen[rest] {
			seen[rest] = true
			names = append(names, rest)
		}
	}
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			switch c.Type {
			case metav1.CauseTypeTooMany:
				truncated = true
			default:
				add(c.Field)
			}
		}
	}
	for _, m := range storageKey.FindAllStringSubmatch(err.Error(), -1) {
		add(m[1])
	}
	return names, truncated
}

func apiMessageOf(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

// listBackoff is longer than a write's: right after a storage version
// change the API server re-initializes the resource's watch cache and
// answers lists with 429 "storage is (re)initializing" until it has read
// every object (tens of seconds at 100k objects).
var listBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 30 * time.Second}

// outageBackoff paces the retries of a write while the API server cannot
// be reached (at most every 5 s); Options.Unreachable bounds their time.
func (r *run) outageBackoff() wait.Backoff {
	return wait.Backoff{Duration: r.opts.RetryDelay, Factor: 2, Jitter: 0.2, Steps: math.MaxInt32, Cap: 5 * time.Second}
}

func (r *run) backoff() wait.Backoff {
	return wait.Backoff{Duration: r.opts.RetryDelay, Factor: 2, Jitter: 0.2, Steps: r.opts.Retries + 1}
}

// retry calls write until it succeeds or fails for good. Server errors and
// timeouts are retried Options.Retries times with backoff from
// Options.RetryDelay; an API server that cannot be reached is waited for up
// to Options.Unreachable from the first such error (a success or an answer
// from the API server ends the outage).
func (r *run) retry(ctx context.Context, write func() error) error {
	server, outage := r.backoff(), r.outageBackoff()
	var down time.Time // when the current outage was first seen
	for {
		err := write()
		var delay time.Duration
		switch {
		case err == nil:
			return nil
		case unreachable(err):
			if down.IsZero() {
				down = time.Now()
			}
			if time.Since(down) >= r.opts.Unreachable {
				return err
			}
			delay = outage.Step()
		case retriable(err):
			down, outage = time.Time{}, r.outageBackoff()
			if server.Steps <= 1 {
				return err
			}
			delay = server.Step()
		default:
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		r.retries.Add(1)
	}
}

// unreachable errors say the request never got an answer from the API
// server: the connection was refused, reset or lost (apimachinery's
// util/net classification).
//
// A response cut short ("unexpected error when reading response body.
// Please retry. Original error: unexpected EOF" from client-go) is one too:
// the write may or may not have landed, and its retry, pinned to the same
// resourceVersion, tells which (rewritten or conflict).
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// listRetriable errors of a list are retriable ones, except the API server
// naming objects it cannot read from storage (a conversion webhook failing
// for them, a version missing from spec.versions): waiting does not repair
// that, even when it comes as 429 "storage is (re)initializing" from a
// watch cache that cannot load those objects.
//
// A list answered 404 Not Found is retried too: the engine lists a version
// the CRD serves, and right after the CRD changed an API server instance
// serves it only once its own CRD informer has the change (see
// cluster.WhenServed).
func listRetriable(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	return retriable(err) && !strings.Contains(err.Error(), "failed to read one or more")
}

// retriable errors are worth another try: server errors and timeouts.
// (429 is retried inside client-go, honouring Retry-After.)
func retriable(err error) bool {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return errors.Is(err, syscallECONNREFUSED) || errors.Is(err, syscallECONNRESET)
}
