package doctor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// widgets builds a namespaced CRD of group example.com with the given
// versions, all served, each schema keeping unknown fields; the first is
// the storage version and the one stored.
func widgets(versions ...string) *crdtest.Builder {
	keep := true
	b := crdtest.New("widgets.example.com").EachVersion(crdtest.Served,
		crdtest.Schema(&apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}))
	b.Version(versions[0], crdtest.Storage)
	for _, v := range versions[1:] {
		b.Version(v)
	}
	return b.Stored(versions[0])
}

// webhookWidgets is widgets with a conversion webhook.
func webhookWidgets(versions ...string) *crdtest.Builder {
	return widgets(versions...).WebhookURL("https://127.0.0.1:1/convert", []byte("x"))
}

// fakeReader serves objects (namespace/name) at every version; listErr
// fails the list at a version, readErr the read of one object at a
// version.
type fakeReader struct {
	crds    []apiextensionsv1.CustomResourceDefinition
	objects []string
	listErr map[string]error
	readErr map[string]map[string]error
	// lists and reads count the requests by version.
	lists, reads map[string]int
}

func (f *fakeReader) ListCRDs(context.Context) ([]apiextensionsv1.CustomResourceDefinition, error) {
	return f.crds, nil
}

func (f *fakeReader) EachObject(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, version string, _ int64, each func(namespace, name string) error) error {
	if f.lists == nil {
		f.lists = map[string]int{}
	}
	f.lists[version]++
	if err := f.listErr[version]; err != nil {
		return err
	}
	for _, o := range f.objects {
		ns, name, _ := strings.Cut(o, "/")
		if err := each(ns, name); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeReader) ReadObject(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, version, namespace, name string) error {
	if f.reads == nil {
		f.reads = map[string]int{}
	}
	f.reads[version]++
	return f.readErr[version][namespace+"/"+name]
}

// storeReadError is the API server's answer to a list that met objects it
// could not decode (Kubernetes 1.37): their storage keys in the causes.
func storeReadError(objects ...string) error {
	var causes []metav1.StatusCause
	for _, o := range objects {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "/registry/example.com/widgets/" + o,
			Message: "object not decodable: conversion webhook for example.com/v1, Kind=Widget failed"})
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonStoreReadError,
		Message: "failed to read one or more widgets.example.com from the storage: conversion webhook for example.com/v1, Kind=Widget failed",
		Details: &metav1.StatusDetails{Group: "example.com", Kind: "widgets", Causes: causes}}}
}

var webhookFailed = apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1, Kind=Widget failed: no"))

func objectNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("team-a/w%04d", i))
	}
	return out
}

func findings(c report.DoctorCRD, code string) []lifecycle.Finding {
	var out []lifecycle.Finding
	for _, f := range c.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// TestObjects: which lists doctor makes, and what it reports of the lists
// that fail.
func TestObjects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		r       *fakeReader
		lists   map[string]int // list requests by version
		reads   map[string]int // read requests by version
		objects *int
		code    string   // the error finding, "" for none
		version string   // its version
		named   []string // objects its message names (and the report lists)
		more    bool
		message []string // more substrings of its message
	}{
		{name: "conversion None: one list", crd: widgets("v1", "v2").CRD(), r: &fakeReader{objects: objectNames(3)},
			lists: map[string]int{"v1": 1}, objects: ptr(3)},
		{name: "webhook without objects: one list", crd: webhookWidgets("v1", "v2").CRD(), r: &fakeReader{},
			lists: map[string]int{"v1": 1}, objects: ptr(0)},
		{name: "webhook with objects: every served version", crd: webhookWidgets("v1", "v2", "v3").CRD(), r: &fakeReader{objects: objectNames(3)},
			lists: map[string]int{"v1": 1, "v2": 1, "v3": 1}, objects: ptr(3)},
		{name: "the default version fails, the API server names the objects", crd: webhookWidgets("v1", "v2").CRD(),
			r:     &fakeReader{objects: objectNames(3), listErr: map[string]error{"v2": storeReadError("team-a/w0001")}},
			lists: map[string]int{"v1": 1, "v2": 1}, objects: ptr(3), code: lifecycle.CodeObjectsUnreadable, version: "v2", named: []string{"team-a/w0001"},
			message: []string{"listing objects at v2 failed", "(they can be listed at v1)", "objects the API server cannot read at v2: team-a/w0001"}},
		{name: "the API server does not name them: read one by one", crd: webhookWidgets("v1", "v2").CRD(),
			r: &fakeReader{objects: objectNames(4), listErr: map[string]error{"v2": webhookFailed},
				readErr: map[string]map[string]error{"v2": {"team-a/w0002": webhookFailed}}},
			lists: map[string]int{"v1": 2, "v2": 1}, reads: map[string]int{"v2": 4}, objects: ptr(4),
			code: lifecycle.CodeObjectsUnreadable, version: "v2", named: []string{"team-a/w0002"}},
		{name: "every read succeeds: the list itself fails", crd: webhookWidgets("v1", "v2").CRD(),
			r:     &fakeReader{objects: objectNames(2), listErr: map[string]error{"v2": webhookFailed}},
			lists: map[string]int{"v1": 2, "v2": 1}, reads: map[string]int{"v2": 2}, objects: ptr(2),
			code: lifecycle.CodeObjectsUnreadable, version: "v2", message: []string{"each object, read on its own at v2, was readable"}},
		{name: "reads bounded", crd: webhookWidgets("v1", "v2").CRD(),
			r: &fakeReader{objects: objectNames(maxObjectReads + 5), listErr: map[string]error{"v2": webhookFailed},
				readErr: map[string]map[string]error{"v2": {"team-a/w0000": webhookFailed}}},
			lists: map[string]int{"v1": 2, "v2": 1}, reads: map[string]int{"v2": maxObjectReads}, objects: ptr(maxObjectReads + 5),
			code: lifecycle.CodeObjectsUnreadable, version: "v2", named: []string{"team-a/w0000"}, more: true, message: []string{"team-a/w0000 and possibly more"}},
		{name: "reads forbidden", crd: webhookWidgets("v1", "v2").CRD(),
			r: &fakeReader{objects: objectNames(2), listErr: map[string]error{"v2": webhookFailed},
				readErr: map[string]map[string]error{"v2": {"team-a/w0000": apierrors.NewForbidden(schema.GroupResource{}, "w0000", errors.New("no"))}}},
			lists: map[string]int{"v1": 2, "v2": 1}, reads: map[string]int{"v2": 1}, objects: ptr(2),
			code: lifecycle.CodeObjectsUnreadable, version: "v2", more: true, message: []string{"reading them one by one was refused"}},
		{name: "no version lists: one error, the objects from the API server", crd: widgets("v2", "v3").CRD(),
			r: &fakeReader{objects: objectNames(2), listErr: map[string]error{
				"v2": storeReadError("team-a/w0000", "team-a/w0001"), "v3": storeReadError("team-a/w0000", "team-a/w0001")}},
			lists: map[string]int{"v2": 1, "v3": 1}, code: lifecycle.CodeObjectsUnlistable, version: "v2", named: []string{"team-a/w0000", "team-a/w0001"},
			message: []string{"objects cannot be listed at any served version (v2, v3)"}},
		{name: "no version lists, nothing named", crd: widgets("v2").CRD(),
			r:     &fakeReader{objects: objectNames(2), listErr: map[string]error{"v2": webhookFailed}},
			lists: map[string]int{"v2": 1}, code: lifecycle.CodeObjectsUnlistable, version: "v2", more: true,
			message: []string{"no served version lists them"}},
		{name: "forbidden: not counted, no other list", crd: webhookWidgets("v1", "v2").CRD(),
			r:     &fakeReader{listErr: map[string]error{"v1": apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New("no"))}},
			lists: map[string]int{"v1": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Doctor{Reader: tc.r, ChunkSize: cluster.ChunkSize}
			c, err := d.Check(context.Background(), tc.crd)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.r.lists, tc.lists) || !reflect.DeepEqual(tc.r.reads, tc.reads) {
				t.Errorf("lists %v reads %v, want %v %v", tc.r.lists, tc.r.reads, tc.lists, tc.reads)
			}
			if !reflect.DeepEqual(c.Objects, tc.objects) {
				t.Errorf("objects %v, want %v", deref(c.Objects), deref(tc.objects))
			}
			var errs []lifecycle.Finding
			for _, f := range c.Findings {
				if f.Severity == lifecycle.SeverityError {
					errs = append(errs, f)
				}
			}
			if tc.code == "" {
				if len(errs) > 0 {
					t.Errorf("errors: %+v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Code != tc.code || errs[0].Version != tc.version {
				t.Fatalf("errors %+v, want one %s at %s", errs, tc.code, tc.version)
			}
			for _, want := range append(slices.Clone(tc.named), tc.message...) {
				if !strings.Contains(errs[0].Message, want) {
					t.Errorf("message lacks %q: %s", want, errs[0].Message)
				}
			}
			i := slices.IndexFunc(c.Lists, func(l report.ObjectList) bool { return l.Version == tc.version })
			if i < 0 || !reflect.DeepEqual(c.Lists[i].Unreadable, tc.named) || c.Lists[i].MoreUnreadable != tc.more || c.Lists[i].Error == "" || c.Lists[i].Objects != nil {
				t.Errorf("lists %+v, want %s unreadable %v more %v", c.Lists, tc.version, tc.named, tc.more)
			}
		})
	}
}

func ptr(n int) *int { return &n }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestForbiddenList: a list this user may not make is a note, with a fix
// that doctor has (no status flag).
func TestForbiddenList(t *testing.T) {
	r := &fakeReader{listErr: map[string]error{"v1": apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New("no"))}}
	c, err := (&Doctor{Reader: r, ChunkSize: cluster.ChunkSize}).Check(context.Background(), widgets("v1").CRD())
	if err != nil {
		t.Fatal(err)
	}
	fs := findings(c, lifecycle.CodeObjectsNotCounted)
	if len(fs) != 1 || fs[0].Severity != lifecycle.SeverityInfo || fs[0].Fix != "grant list on widgets.example.com" || c.Objects != nil {
		t.Errorf("findings %+v, objects %v", c.Findings, deref(c.Objects))
	}
}

// TestConnectionError: an error that is not the API server's answer stops
// the run.
func TestConnectionError(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:6443: connection refused")
	r := &fakeReader{listErr: map[string]error{"v1": down}}
	if _, err := (&Doctor{Reader: r, ChunkSize: cluster.ChunkSize}).Check(context.Background(), widgets("v1").CRD()); !errors.Is(err, down) {
		t.Errorf("err %v, want %v", err, down)
	}
}

// TestProgress: a list reports every progressEvery objects and at its end.
func TestProgress(t *testing.T) {
	var events []Event
	d := &Doctor{Reader: &fakeReader{objects: objectNames(2*progressEvery + 1)}, ChunkSize: cluster.ChunkSize, Progress: func(e Event) { events = append(events, e) }}
	if _, err := d.Check(context.Background(), widgets("v1").CRD()); err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{CRD: "widgets.example.com", Version: "v1", Objects: progressEvery},
		{CRD: "widgets.example.com", Version: "v1", Objects: 2 * progressEvery},
		{CRD: "widgets.example.com", Version: "v1", Objects: 2*progressEvery + 1, Done: true},
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events %+v, want %+v", events, want)
	}
}

// TestUnreadableFromError: the objects that the API server's answer names.
func TestUnreadableFromError(t *testing.T) {
	ns := widgets("v1").CRD()
	cl := widgets("v1").ClusterScoped().CRD()
	tooMany := storeReadError("team-a/w1").(*apierrors.StatusError)
	tooMany.ErrStatus.Details.Causes = append(tooMany.ErrStatus.Details.Causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"})
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		err  error
		want []string
		more bool
	}{
		{"causes", ns, storeReadError("team-a/w1", "team-b/w2"), []string{"team-a/w1", "team-b/w2"}, false},
		{"too many", ns, tooMany, []string{"team-a/w1"}, true},
		{"cluster-scoped, another prefix", cl, &apierrors.StatusError{ErrStatus: metav1.Status{Code: 500, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Field: "/8f3a/registry/example.com/widgets/w1"}, {Field: "/registry/other.example.com/widgets/w2"}}}}}, []string{"w1"}, false},
		{"the message only (the watch cache dropped the causes)", ns, apierrors.NewInternalError(errors.New(
			"failed to read one or more widgets.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/example.com/widgets/team-a/w1, ResourceVersion: 0, AdditionalErrorMsg: x (and 2 more)")),
			[]string{"team-a/w1"}, true},
		{"nothing named", ns, webhookFailed, nil, false},
		{"a key of another shape", ns, storeReadError("w1"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, more := unreadableFromError(tc.err, tc.crd)
			if !reflect.DeepEqual(got, tc.want) || more != tc.more {
				t.Errorf("got %v %v, want %v %v", got, more, tc.want, tc.more)
			}
		})
	}
}

// TestUnreadableText: a finding names at most maxNamed objects.
func TestUnreadableText(t *testing.T) {
	got := unreadableText(listing{version: "v2", unreadable: objectNames(maxNamed + 2)})
	if !strings.HasSuffix(got, "team-a/w0009 and 2 more (-o json lists them)") || strings.Contains(got, "w0010") {
		t.Errorf("got %q", got)
	}
	if got := unreadableText(listing{version: "v2", unreadable: objectNames(maxNamed + 2), more: true}); !strings.HasSuffix(got, "and at least 2 more") {
		t.Errorf("got %q", got)
	}
}

// TestSelect: names match a CRD by name, resource, short name or kind;
// --all takes every CRD; each CRD once, in name order.
func TestSelect(t *testing.T) {
	a, b := *widgets("v1").CRD(), *widgets("v1").CRD()
	b.Name, b.Spec.Group, b.Spec.Names.ShortNames = "widgets.other.example.com", "other.example.com", []string{"wo"}
	list := []apiextensionsv1.CustomResourceDefinition{b, a}
	names := func(crds []*apiextensionsv1.CustomResourceDefinition) []string {
		var out []string
		for _, c := range crds {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		names []string
		all   bool
		want  []string
		err   string
	}{
		{names: []string{"wo", "widgets.example.com"}, want: []string{"widgets.example.com", "widgets.other.example.com"}},
		{names: []string{"wo"}, all: true, want: []string{"widgets.example.com", "widgets.other.example.com"}},
		{names: []string{"widgets"}, err: `"widgets" matches 2 CustomResourceDefinitions`},
		{names: []string{"pods"}, err: `no CustomResourceDefinition matches "pods"`},
	} {
		got, err := Select(list, tc.names, tc.all)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: err %v, want %q", tc.names, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(names(got), tc.want)):
			t.Errorf("%v: %v %v, want %v", tc.names, names(got), err, tc.want)
		}
	}
	var notCRD *cluster.NotACRDError
	if _, err := Select(list, []string{"pods"}, false); !errors.As(err, &notCRD) {
		t.Errorf("err %T, want *cluster.NotACRDError", err)
	}
}

// TestRun: the report holds every selected CRD in name order, counts its
// findings and states the requests made.
func TestRun(t *testing.T) {
	ok, broken := *widgets("v1").CRD(), *widgets("v2").CRD()
	broken.Name, broken.Spec.Group = "widgets.broken.example.com", "broken.example.com"
	r := &fakeReader{crds: []apiextensionsv1.CustomResourceDefinition{ok, broken}, objects: objectNames(1), listErr: map[string]error{"v2": webhookFailed}}
	d := &Doctor{Reader: r, ChunkSize: cluster.ChunkSize, Requests: func() int64 { return 7 }}
	got, err := d.Run(context.Background(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.CRDs) != 2 || got.CRDs[0].Name != "widgets.broken.example.com" || got.Requests != 7 || got.Summary.Errors != 1 || !got.Summary.Incompatible {
		t.Errorf("report %+v", got)
	}
}
