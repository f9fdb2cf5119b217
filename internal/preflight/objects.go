package preflight

import (
	"fmt"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
)

// Objects turns what cluster.Client.CheckObjectsAt found at version into
// the checks ObjectsReadable and ObjectsValid.
func Objects(found *cluster.ObjectsCheck, version string) edit.Checks {
	var cs edit.Checks
	if found.ListError != "" {
		return append(cs, edit.Check{
			Name: "ObjectsReadable", Outcome: edit.Fail,
			Message: fmt.Sprintf("the objects cannot be read at %s: %s", version, found.ListError),
		})
	}
	cs = append(cs, edit.Check{
		Name: "ObjectsReadable", Outcome: edit.Pass,
		Message: fmt.Sprintf("all %d object(s) can be read at %s", found.Listed, version),
	})
	if len(found.Problems) == 0 {
		return append(cs, edit.Check{
			Name: "ObjectsValid", Outcome: edit.Pass,
			Message: fmt.Sprintf("%d of %d object(s) checked: valid at %s (server-side dry run)", found.Validated, found.Listed, version),
		})
	}
	var details []string
	for _, p := range found.Problems {
		details = append(details, p.String())
	}
	return append(cs, edit.Check{
		Name: "ObjectsValid", Outcome: edit.Fail,
		Message: fmt.Sprintf("%d of %d checked object(s) are invalid at %s", len(found.Problems), found.Validated, version),
		Details: details,
	})
}
