package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The message is the one kube-apiserver v1.37 answers a list with when a
// conversion webhook fails for stored objects.
func TestUnreadableObjects(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "migrate-fail.example.com", Version: "v2", Resource: "crontabs"}
	msg := "failed to read one or more crontabs.migrate-fail.example.com from the storage: StorageError: corrupt object, Code: 7, " +
		"Key: /b9ea116b7f8d85d2/registry/migrate-fail.example.com/crontabs/fail-a/crontab-00007, ResourceVersion: 0, " +
		"AdditionalErrorMsg: object not decodable revision=13825: conversion webhook for migrate-fail.example.com/v1, Kind=CronTab failed: the test cannot convert crontab-00007; " +
		"StorageError: corrupt object, Code: 7, Key: /x/registry/migrate-fail.example.com/crontabs/cluster-obj, ResourceVersion: 0, AdditionalErrorMsg: …"
	got, truncated := unreadableObjects(apierrors.NewInternalError(errors.New(msg)), gvr)
	if strings.Join(got, " ") != "fail-a/crontab-00007 cluster-obj" || truncated {
		t.Errorf("unreadableObjects = %v, truncated %v", got, truncated)
	}
	if got, _ := unreadableObjects(apierrors.NewForbidden(schema.GroupResource{}, "x", errors.New("no")), gvr); got != nil {
		t.Error("a forbidden list is not an unreadable object")
	}
	// The API server's StorageReadError: every object in the causes, the
	// message naming the first only.
	key := func(name string) string { return "/registry/migrate-fail.example.com/crontabs/fail-a/" + name }
	readErr := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonStoreReadError,
		Message: "failed to read one or more crontabs.migrate-fail.example.com from the storage: StorageError: corrupt object, Code: 7, Key: " + key("a") + ", ResourceVersion: 0, AdditionalErrorMsg: … (and 2 more)",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: key("a"), Message: "corrupt object"},
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: key("b"), Message: "corrupt object"},
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: key("c"), Message: "corrupt object"},
			{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"},
		}},
	}}
	got, truncated = unreadableObjects(readErr, gvr)
	if strings.Join(got, " ") != "fail-a/a fail-a/b fail-a/c" || !truncated {
		t.Errorf("unreadableObjects of a StorageReadError = %v, truncated %v; want all three, truncated", got, truncated)
	}
}

func TestRetriable(t *testing.T) {
	for err, want := range map[error]bool{
		apierrors.NewServiceUnavailable("x"):                     true,
		apierrors.NewInternalError(errors.New("x")):              true,
		apierrors.NewTimeoutError("x", 1):                        true,
		apierrors.NewTooManyRequests("x", 1):                     true,
		apierrors.NewConflict(schema.GroupResource{}, "x", nil):  false,
		apierrors.NewNotFound(schema.GroupResource{}, "x"):       false,
		apierrors.NewBadRequest("x"):                             false,
		apierrors.NewForbidden(schema.GroupResource{}, "x", nil): false,
	} {
		if retriable(err) != want {
			t.Errorf("retriable(%v) = %v, want %v", err, !want, want)
		}
	}
}

// Case 16: a watch cache that cannot load objects whose conversion webhook
// is down answers 429 "storage is (re)initializing" for good; the list is
// not retried for it.
func TestListRetriable(t *testing.T) {
	initializing := apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	unreadable := apierrors.NewTooManyRequests("storage is (re)initializing: failed to list <unspecified>: failed to read one or more kafkasources.sources.example.com from the storage: StorageError: corrupt object", 1)
	if !listRetriable(apierrors.NewNotFound(schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"}, "")) {
		t.Error("a list answered 404 (the version not served yet) is not retried")
	}
	if !listRetriable(initializing) || listRetriable(unreadable) || !retriable(unreadable) {
		t.Errorf("listRetriable(initializing) = %v, listRetriable(unreadable) = %v", listRetriable(initializing), listRetriable(unreadable))
	}
}

// TestRetryBudgets: server errors spend Options.Retries; an unreachable API
// server is waited for up to Options.Unreachable, and an answer from the
// server in between starts a new outage; other errors end at once.
func TestRetryBudgets(t *testing.T) {
	refused := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	lost := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: io.EOF}
	// client-go's words when the connection drops while it reads the answer.
	cut := fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF)
	unavailable := apierrors.NewServiceUnavailable("x")
	invalid := apierrors.NewBadRequest("x")
	cases := []struct {
		name   string
		errs   []error // answers of the successive calls; nil after the last
		calls  int
		failed bool
	}{
		{"success", nil, 1, false},
		{"not retried", []error{invalid}, 1, true},
		{"server errors within the retries", []error{unavailable, unavailable}, 3, false},
		{"server errors past the retries", []error{unavailable, unavailable, unavailable, unavailable}, 3, true},
		{"an outage longer than the retries", []error{refused, refused, lost, refused, cut, refused}, 7, false},
		{"outages apart from the server errors", []error{unavailable, refused, refused, refused, unavailable, refused}, 7, false},
		{"an outage past its budget", repeat(refused, 1000), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Outages within their budget are retried however slowly this
			// machine runs the loop: the budget is an hour, except where
			// its end is the subject.
			budget := time.Hour
			if tc.calls == 0 {
				budget = 50 * time.Millisecond
			}
			r := &run{opts: Options{Retries: 2, RetryDelay: time.Millisecond, Unreachable: budget}}
			calls := 0
			err := r.retry(context.Background(), func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if (err != nil) != tc.failed {
				t.Errorf("error %v, want failed %v", err, tc.failed)
			}
			if tc.calls != 0 && calls != tc.calls {
				t.Errorf("%d calls, want %d", calls, tc.calls)
			}
		})
	}
	for _, err := range []error{refused, lost, cut} {
		if !unreachable(err) {
			t.Errorf("unreachable(%v) = false", err)
		}
	}
	if unreachable(unavailable) || unreachable(invalid) {
		t.Error("an answer from the API server is not an outage")
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}
