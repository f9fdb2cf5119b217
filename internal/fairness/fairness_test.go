package fairness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// recorder is a Cluster that keeps the objects (name -> uid) in maps and,
// with landsInOwn, lands requests in the created FlowSchema once it
// exists (elsewhere without); its requests fail with lookErr.
type recorder struct {
	calls      []string
	fs, pl     map[string]string
	landsInOwn bool
	createErr  error
	lookErr    error
	groups     []string
	n          int
}

func (r *recorder) uid() string {
	r.n++
	return fmt.Sprintf("uid-%d", r.n)
}

func (r *recorder) WhoAmI(context.Context) (string, []string, error) {
	return "alice", r.groups, nil
}

func (r *recorder) CreatePriorityLevel(_ context.Context, pl *flowcontrolv1.PriorityLevelConfiguration, dryRun bool) (string, error) {
	r.calls = append(r.calls, map[bool]string{true: "create pl (dry run)", false: "create pl"}[dryRun])
	if _, ok := r.pl[pl.Name]; ok {
		return "", apierrors.NewAlreadyExists(flowcontrolv1.Resource("prioritylevelconfigurations"), pl.Name)
	}
	if dryRun {
		return "", nil
	}
	r.pl[pl.Name] = r.uid()
	return r.pl[pl.Name], nil
}

func (r *recorder) CreateFlowSchema(_ context.Context, fs *flowcontrolv1.FlowSchema, dryRun bool) (string, error) {
	r.calls = append(r.calls, map[bool]string{true: "create fs (dry run)", false: "create fs"}[dryRun])
	if r.createErr != nil {
		return "", r.createErr
	}
	if _, ok := r.fs[fs.Name]; ok {
		return "", apierrors.NewAlreadyExists(flowcontrolv1.Resource("flowschemas"), fs.Name)
	}
	if dryRun {
		return "", nil
	}
	r.fs[fs.Name] = r.uid()
	return r.fs[fs.Name], nil
}

func deleteOf(m map[string]string, name, uid string) bool {
	got, ok := m[name]
	if !ok || uid != "" && got != uid {
		return false
	}
	delete(m, name)
	return true
}

func (r *recorder) DeleteFlowSchema(_ context.Context, name, uid string) (bool, error) {
	r.calls = append(r.calls, "delete fs")
	return deleteOf(r.fs, name, uid), nil
}

func (r *recorder) DeletePriorityLevel(_ context.Context, name, uid string) (bool, error) {
	r.calls = append(r.calls, "delete pl")
	return deleteOf(r.pl, name, uid), nil
}

func (r *recorder) FlowSchemaOf(context.Context, schema.GroupVersionResource) (string, error) {
	if r.lookErr != nil {
		return "", r.lookErr
	}
	for _, uid := range r.fs {
		if r.landsInOwn {
			return uid, nil
		}
	}
	return "uid-exempt", nil
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// TestAcquireAndRelease: a run's level is created after removing what a
// killed run left under the same name, waited for until a request lands in
// it, and removed by Release; requests that land elsewhere (system:masters
// is exempt) remove both again and refuse; a dry run creates both as dry
// runs and removes nothing; a failed create removes what was created.
func TestAcquireAndRelease(t *testing.T) {
	ctx := context.Background()
	name := Name("alice", "widgets.example.com")
	fresh := func() *recorder { return &recorder{fs: map[string]string{}, pl: map[string]string{}, landsInOwn: true} }
	o := Options{CRD: "widgets.example.com", Resource: widgets, Poll: time.Millisecond, LandingWait: 50 * time.Millisecond}

	r := fresh()
	r.fs[name], r.pl[name] = "uid-killed", "uid-killed" // left by a killed run
	l, err := Acquire(ctx, r, o)
	if err != nil {
		t.Fatal(err)
	}
	if !l.LeftoverRemoved || l.Shares != DefaultShares || l.User != "alice" || l.FlowSchemaUID != r.fs[name] || l.PriorityLevelUID != r.pl[name] {
		t.Fatalf("acquired %+v with objects %v %v", l, r.fs, r.pl)
	}
	if err := l.Release(ctx, r); err != nil || !l.Removed || len(r.fs)+len(r.pl) != 0 {
		t.Fatalf("release: %v, %+v, left %v %v", err, l, r.fs, r.pl)
	}
	if got, want := strings.Join(r.calls, ", "), "delete fs, delete pl, create pl, create fs, delete fs, delete pl"; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}

	r = fresh()
	r.landsInOwn = false
	_, err = Acquire(ctx, r, o)
	var nl *NotLandingError
	if !errors.As(err, &nl) || nl.LandedIn != "uid-exempt" || len(r.fs)+len(r.pl) != 0 {
		t.Fatalf("requests landing elsewhere: %v, left %v %v; want a NotLandingError and nothing left", err, r.fs, r.pl)
	}

	// Another run of the migration removed this one's objects and
	// created its own: Release leaves them (uid preconditions).
	r = fresh()
	l, err = Acquire(ctx, r, o)
	if err != nil {
		t.Fatal(err)
	}
	r.fs[name], r.pl[name] = "uid-other", "uid-other"
	if err := l.Release(ctx, r); err != nil || r.fs[name] != "uid-other" || r.pl[name] != "uid-other" {
		t.Fatalf("release after another run took the name: %v, left %v %v; want the other run's objects kept", err, r.fs, r.pl)
	}

	// Requests that get no answer until the wait runs out: the refusal,
	// not their error, with the last one in its reason.
	r = fresh()
	r.lookErr = errors.New("rate: Wait(n=1) would exceed context deadline")
	_, err = Acquire(ctx, r, o)
	if !errors.As(err, &nl) || !strings.Contains(nl.Why(), "would exceed context deadline") || len(r.fs)+len(r.pl) != 0 {
		t.Fatalf("failing requests: %v, left %v %v; want a NotLandingError naming the last error and nothing left", err, r.fs, r.pl)
	}

	// A dry run where a killed run left the objects: says so.
	r = fresh()
	r.pl[name] = "uid-killed"
	if _, err := Acquire(ctx, r, Options{CRD: "widgets.example.com", Resource: widgets, DryRun: true}); err == nil || !strings.Contains(err.Error(), "a killed run of this migration left it") {
		t.Fatalf("dry run over a leftover: %v", err)
	}
	// The same in the dry run that plans a run without one (retire's):
	// that run removes them first, so the plan goes on, says so, and
	// removes nothing itself.
	r = fresh()
	r.fs[name], r.pl[name] = "uid-killed", "uid-killed"
	l, err = Acquire(ctx, r, Options{CRD: "widgets.example.com", Resource: widgets, DryRun: true, Planned: true})
	if err != nil || !l.LeftoverRemoved || r.fs[name] != "uid-killed" || r.pl[name] != "uid-killed" {
		t.Fatalf("planned dry run over a leftover: %v, %+v, objects %v %v; want no error, the leftover named and kept", err, l, r.fs, r.pl)
	}

	r = fresh()
	r.groups = []string{"system:authenticated", ExemptGroup}
	if _, err = Acquire(ctx, r, o); !errors.As(err, &nl) || !nl.Exempt || len(r.calls) != 0 {
		t.Fatalf("system:masters: %v after %v; want an exempt refusal before anything is created", err, r.calls)
	}

	r = fresh()
	l, err = Acquire(ctx, r, Options{CRD: "widgets.example.com", Resource: widgets, Shares: 7, DryRun: true})
	if err != nil || !l.DryRun || l.Shares != 7 || len(r.fs)+len(r.pl) != 0 {
		t.Fatalf("dry run: %v, %+v", err, l)
	}
	if err := l.Release(ctx, r); err != nil || strings.Join(r.calls, ", ") != "create pl (dry run), create fs (dry run)" {
		t.Errorf("dry run calls %v (release: %v), want the two dry-run creates only", r.calls, err)
	}

	r = fresh()
	r.createErr = errors.New("forbidden")
	if _, err := Acquire(ctx, r, o); err == nil || !strings.Contains(err.Error(), "forbidden") || len(r.pl) != 0 {
		t.Fatalf("a refused FlowSchema: %v, left %v; want the error and the priority level removed", err, r.pl)
	}
}

// TestObjects: the FlowSchema holds only the identity's requests to the
// CRD's resource, before the defaults that hold users, in a level that
// queues and neither lends nor borrows; both are labelled and annotated,
// and the name depends on the identity and the CRD.
func TestObjects(t *testing.T) {
	pl, fs := Objects("system:serviceaccount:ops:migrator", "widgets.example.com", widgets, 3)
	if pl.Name != fs.Name || fs.Spec.PriorityLevelConfiguration.Name != pl.Name || !strings.HasPrefix(pl.Name, "crdversion-") {
		t.Errorf("names %s, %s -> %s", pl.Name, fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
	}
	lim := pl.Spec.Limited
	if *lim.NominalConcurrencyShares != 3 || *lim.LendablePercent != 0 || *lim.BorrowingLimitPercent != 0 || lim.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue {
		t.Errorf("priority level %+v", lim)
	}
	rule := fs.Spec.Rules[0]
	if fs.Spec.MatchingPrecedence >= 7500 || len(rule.Subjects) != 1 || rule.Subjects[0].User.Name != "system:serviceaccount:ops:migrator" ||
		len(rule.ResourceRules) != 1 || rule.ResourceRules[0].APIGroups[0] != "example.com" || rule.ResourceRules[0].Resources[0] != "widgets" || len(rule.NonResourceRules) != 0 {
		t.Errorf("flow schema %+v", fs.Spec)
	}
	for _, m := range []map[string]string{pl.Labels, fs.Labels} {
		if m[ManagedByLabel] != ManagedBy {
			t.Errorf("labels %v", m)
		}
	}
	if fs.Annotations[CRDAnnotation] != "widgets.example.com" || fs.Annotations[UserAnnotation] != "system:serviceaccount:ops:migrator" {
		t.Errorf("annotations %v", fs.Annotations)
	}
	if first := Name("a", "b.c"); first == Name("a", "d.c") || first == Name("x", "b.c") || first != Name("a", "b.c") {
		t.Error("names do not follow the identity and the CRD")
	}
	if !IsName(pl.Name) || IsName("crdversion-bench-user") || IsName("global-default") {
		t.Error("IsName does not tell a run's names from others")
	}
}
