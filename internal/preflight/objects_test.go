package preflight

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
)

func outcomes(cs edit.Checks) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+"="+string(c.Outcome))
	}
	return strings.Join(parts, " ")
}

func TestObjectsChecks(t *testing.T) {
	lost := &cluster.ObjectsCheck{From: "v1", To: "v2", Listed: 2, Validated: 2, Lost: []cluster.ObjectLoss{{Object: "default/w1", Paths: []string{".spec.image"}}}}
	forbidden := &cluster.ObjectsCheck{From: "v1", To: "v2", Listed: 2, Validated: 2, Forbidden: []cluster.ObjectProblem{{Object: "default/w1", Message: "forbidden"}, {Object: "default/w2", Message: "forbidden"}}}
	oneVersion := &cluster.ObjectsCheck{From: "v2", To: "v2", Listed: 2, Validated: 2}
	byReads := &cluster.ObjectsCheck{From: "v1", To: "v2", Listed: 5, Validated: 1, ReadAtTo: 4}
	changed := &cluster.ObjectsCheck{From: "v1", To: "v2", Listed: 2, Validated: 2, Changed: []cluster.ObjectLoss{{Object: "default/w1", Paths: []string{".spec.size"}}}}
	all := edit.Pruning{All: true}
	lostTwo := &cluster.ObjectsCheck{From: "v1", To: "v2", Listed: 2, Validated: 2, Lost: []cluster.ObjectLoss{{Object: "default/w1", Paths: []string{".spec.image", ".spec.ports[0].name"}},
		{Object: "default/w2", Paths: []string{".spec.ports[3].name"}}}, Changed: []cluster.ObjectLoss{{Object: "default/w1", Paths: []string{".spec.size"}}}}
	for _, tc := range []struct {
		name  string
		found *cluster.ObjectsCheck
		allow edit.Pruning
		want  string
	}{
		{"a lost field refuses", lost, edit.Pruning{}, "ObjectsReadable=pass ObjectsValid=pass FieldsKept=fail"},
		{"--allow-pruning warns", lost, all, "ObjectsReadable=pass ObjectsValid=pass FieldsKept=warn"},
		{"a 403 is a permission failure, not invalid objects", forbidden, edit.Pruning{}, "ObjectsPermitted=fail ObjectsReadable=pass"},
		{"read at one version: nothing compared", oneVersion, edit.Pruning{}, "ObjectsReadable=pass ObjectsValid=pass"},
		{"by reads: every object checked", byReads, edit.Pruning{}, "ObjectsReadable=pass ObjectsValid=pass FieldsKept=pass"},
		{"a changed value refuses", changed, edit.Pruning{}, "ObjectsReadable=pass ObjectsValid=pass ValuesKept=fail FieldsKept=pass"},
		{"a changed value with --allow-pruning warns", changed, all, "ObjectsReadable=pass ObjectsValid=pass ValuesKept=warn FieldsKept=pass"},
		{"paths accept what they name, the rest refuses", lostTwo, edit.Pruning{Paths: []string{".spec.ports[*].name"}}, "ObjectsReadable=pass ObjectsValid=pass ValuesKept=fail FieldsKept=fail LossAccepted=warn"},
		{"paths that name every loss warn", lostTwo, edit.Pruning{Paths: []string{".spec.ports", ".spec.image", ".spec.size"}}, "ObjectsReadable=pass ObjectsValid=pass FieldsKept=pass LossAccepted=warn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Objects(tc.found, tc.allow)
			if got := outcomes(cs); got != tc.want {
				t.Errorf("checks %s, want %s", got, tc.want)
			}
			if tc.found == byReads && !strings.Contains(cs[1].Message, "5 of 5 object(s) checked") {
				t.Errorf("objects judged by reads are not counted as checked: %s", cs[1].Message)
			}
			if tc.found == lostTwo && len(tc.allow.Paths) == 1 {
				// The failures name what is left, with the flag that
				// accepts it and what was accepted, nothing more.
				way := "'--allow-pruning=.spec.image,.spec.ports[*].name,.spec.size'"
				for _, c := range cs[2:4] {
					if !strings.HasSuffix(c.Message, way) || strings.Contains(strings.Join(c.Details, "\n"), "ports") {
						t.Errorf("%s: %q (details %q), want it to name the rest and end in %s", c.Name, c.Message, c.Details, way)
					}
				}
				if got := strings.Join(cs[4].Details, "\n"); got != "default/w1: .spec.ports[0].name\ndefault/w2: .spec.ports[3].name" || !strings.Contains(cs[4].Message, "--allow-pruning=.spec.ports[*].name accepts") {
					t.Errorf("LossAccepted %q, details %q", cs[4].Message, got)
				}
			}
			if tc.found == lost && !strings.Contains(strings.Join(cs[len(cs)-1].Details, "\n"), "default/w1: .spec.image") {
				t.Errorf("FieldsKept does not name the object and path: %+v", cs[len(cs)-1])
			}
		})
	}
}
