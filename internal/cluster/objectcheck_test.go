package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestLostPaths(t *testing.T) {
	old := map[string]any{
		"apiVersion": "x/v1", "metadata": map[string]any{"name": "w1"},
		"spec": map[string]any{
			"replicas": int64(1), "image": "nginx", "extra": map[string]any{"deep": []any{int64(1), int64(2)}},
			"labels": map[string]any{"team": "a", "env": "prod", "a.b/c": "x"},
			"ports":  []any{map[string]any{"name": "a", "x": "1"}, map[string]any{"name": "b"}},
			"gone":   nil,
			"kind":   map[string]any{"a": "b"},
		},
	}
	new := map[string]any{
		"apiVersion": "x/v2",
		"spec": map[string]any{
			"replicas": int64(2), "labels": map[string]any{"team": "a"},
			"ports": []any{map[string]any{"name": "a"}},
			"kind":  "scalar",
		},
	}
	want := []string{".spec.extra", ".spec.image", ".spec.kind", `.spec.labels["a.b/c"]`, ".spec.labels.env", ".spec.ports[0].x", ".spec.ports[1]"}
	if got := LostPaths(old, new); !reflect.DeepEqual(got, want) {
		t.Errorf("LostPaths = %q, want %q", got, want)
	}
	if got := LostPaths(old, old); len(got) != 0 {
		t.Errorf("LostPaths of an object and itself = %q", got)
	}
}

// TestNotJudged: answers that say nothing about the object — it kept
// changing, or the API server (or a conversion webhook behind it) did not
// get to judge the write — make the object unknown, not refused: their
// advice is to run again, not to fix the object.
func TestNotJudged(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	tests := []struct {
		err  error
		want bool
	}{
		{apierrors.NewConflict(gr, "a", errors.New("the object has been modified")), true},
		{apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1 failed")), true},
		{apierrors.NewServiceUnavailable("etcd leader changed"), true},
		{apierrors.NewTimeoutError("request timed out", 1), true},
		{apierrors.NewServerTimeout(gr, "patch", 1), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewGenericServerResponse(502, "patch", gr, "a", "bad gateway", 0, true), true},
		{apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "a", nil), false},
		{apierrors.NewBadRequest("transition rule"), false},
		{apierrors.NewForbidden(gr, "a", errors.New("denied by a policy")), false},
	}
	for _, tt := range tests {
		if got := notJudged(tt.err); got != tt.want {
			t.Errorf("notJudged(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestProblemLinesShareAnAnswer (trial): forty objects refused by one
// policy printed forty identical lines; objects with the same answer share
// a line, every object named, in the order given.
func TestProblemLinesShareAnAnswer(t *testing.T) {
	got := ProblemLines([]ObjectProblem{{Object: "default/a", Message: "denied by p"}, {Object: "default/b", Message: "spec.size: Invalid value"},
		{Object: "default/c", Message: "denied by p"}})
	want := []string{"default/a, default/c: denied by p", "default/b: spec.size: Invalid value"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ProblemLines = %q, want %q", got, want)
	}
	// The API server names the object in its message (a trial found one
	// line per object still): answers alike but for the name share a line.
	got = ProblemLines([]ObjectProblem{{Object: "a/h0", Message: `hats.t3.example.com "h0" is forbidden: hats are frozen`},
		{Object: "a/h1", Message: `hats.t3.example.com "h1" is forbidden: hats are frozen`},
		{Object: "b/h2", Message: `hats.t3.example.com "h2" is invalid: spec.size: Invalid value`}})
	want = []string{`a/h0, a/h1: hats.t3.example.com "<name>" is forbidden: hats are frozen`, `b/h2: hats.t3.example.com "h2" is invalid: spec.size: Invalid value`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ProblemLines = %q, want %q", got, want)
	}
}
