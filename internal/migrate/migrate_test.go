package migrate

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	got := unreadableObjects(apierrors.NewInternalError(errors.New(msg)), gvr)
	if strings.Join(got, " ") != "fail-a/crontab-00007 cluster-obj" {
		t.Errorf("unreadableObjects = %v", got)
	}
	if unreadableObjects(apierrors.NewForbidden(schema.GroupResource{}, "x", errors.New("no")), gvr) != nil {
		t.Error("a forbidden list is not an unreadable object")
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
	if !listRetriable(initializing) || listRetriable(unreadable) || !retriable(unreadable) {
		t.Errorf("listRetriable(initializing) = %v, listRetriable(unreadable) = %v", listRetriable(initializing), listRetriable(unreadable))
	}
}
