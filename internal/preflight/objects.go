package preflight

import (
	"fmt"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
)

// Objects turns what cluster.Client.CheckObjects found into the checks
// ObjectsReadable (every object read at From and at To), ObjectsPermitted
// (the API server let the checks run), ObjectsValid (the dry-run no-op
// update through To, the request migrate sends, was accepted, and so was
// a dry-run create of the object at To) and
// FieldsKept (no field read at From is missing at To). A loss p accepts
// (p.All: every one) is a warning that still names every object and path:
// with paths, LossAccepted names what they accept, and the rest fails as
// before, each failure's way out the flag that accepts exactly what it
// names and what was accepted.
func Objects(found *cluster.ObjectsCheck, p edit.Pruning) (cs edit.Checks) {
	from, to := found.From, found.To
	allowPruning := p.All
	var accepted []cluster.ObjectLoss
	if !p.All && len(p.Paths) > 0 {
		f := *found
		f.NotRoundTripped, accepted = loss.Accept(f.NotRoundTripped, p.Paths, accepted)
		f.Changed, accepted = loss.Accept(f.Changed, p.Paths, accepted)
		f.Lost, accepted = loss.Accept(f.Lost, p.Paths, accepted)
		found = &f
	}
	way := loss.AcceptFlag([]cluster.ObjectLoss{{Paths: p.Paths}}, found.NotRoundTripped, found.Changed, found.Lost)
	if len(accepted) > 0 {
		defer func() {
			cs = append(cs, edit.Check{Name: "LossAccepted", Outcome: edit.Warn, Details: lossLines(accepted),
				Message: fmt.Sprintf("%d object(s) have fields or values at %s that %s accepts: they WILL BE LOST or CHANGED when the objects are rewritten at %s", len(accepted), from, p.Flag(), to)})
		}()
	}
	if found.ListError != "" {
		return append(cs, edit.Check{
			Name: "ObjectsReadable", Outcome: edit.Fail,
			Message: fmt.Sprintf("the objects cannot be read at %s: %s", from, found.ListError),
		})
	}
	if len(found.Forbidden) > 0 {
		cs = append(cs, edit.Check{
			Name: "ObjectsPermitted", Outcome: edit.Fail,
			Message: fmt.Sprintf("permission denied: %d of %d object(s) could not be checked at %s, so whether they are valid there is unknown (grant the permission and re-run): %s",
				len(found.Forbidden), found.Listed, to, found.Forbidden[0].Message),
			Details: cluster.ProblemLines(found.Forbidden),
		})
	}
	if len(found.Unreadable) > 0 {
		cs = append(cs, edit.Check{
			Name: "ObjectsReadable", Outcome: edit.Fail,
			Message: fmt.Sprintf("%d of %d object(s) cannot be read at %s", len(found.Unreadable), found.Listed, to),
			Details: cluster.ProblemLines(found.Unreadable),
		})
	} else {
		at := from + " and at " + to
		if from == to {
			at = to
		}
		cs = append(cs, edit.Check{
			Name: "ObjectsReadable", Outcome: edit.Pass,
			Message: fmt.Sprintf("all %d object(s) read at %s in %.1fs (%.0f objects/s)", found.Listed, at, found.ElapsedSeconds, found.ObjectsPerSecond),
		})
	}
	// The objects judged by reads (CheckObjectsOptions.Reads) were sent
	// the dry-run create and compared with their read at To in place of
	// the dry-run update: checked all the same.
	checked := found.Validated + found.ReadAtTo
	update := "the no-op update that migrate sends through " + to + " is accepted"
	if found.ReadAtTo > 0 {
		update = "the no-op update that migrate sends through " + to + " is accepted (" + fmt.Sprint(found.Validated) + " sent it as a dry run; for the other " + fmt.Sprint(found.ReadAtTo) + ", read instead, nothing acts on it that the create does not judge)"
	}
	switch {
	case len(found.Problems) > 0:
		cs = append(cs, edit.Check{
			Name: "ObjectsValid", Outcome: edit.Fail,
			Message: fmt.Sprintf("%d of %d checked object(s) are refused at %s: the no-op update that migrate sends through %s fails (server-side dry run)", len(found.Problems), checked, to, to),
			Details: cluster.ProblemLines(found.Problems),
		})
	case len(found.InvalidAsNew) > 0:
		cs = append(cs, edit.Check{
			Name: "ObjectsValid", Outcome: edit.Fail,
			Message: fmt.Sprintf("%d of %d checked object(s) are invalid at %s: migrate's no-op update is accepted (ratcheting keeps unchanged invalid fields), but not the objects as new (server-side dry-run create: the whole schema and its rules); fix the objects or the schema", len(found.InvalidAsNew), checked, to),
			Details: cluster.ProblemLines(found.InvalidAsNew),
		})
	case len(found.Forbidden) == 0:
		cs = append(cs, edit.Check{
			Name: "ObjectsValid", Outcome: edit.Pass,
			Message: fmt.Sprintf("%d of %d object(s) checked: %s, and each is valid at %s as a new object (server-side dry runs: schema, transition rules, admission)", checked, found.Listed, update, to),
		})
		if n := len(found.NotCheckedAsNew); n > 0 {
			cs[len(cs)-1].Message = fmt.Sprintf("%d of %d object(s) checked: %s, and %d are valid at %s as new objects (server-side dry runs: schema, transition rules, admission)",
				checked, found.Listed, update, checked-n, to)
			cs = append(cs, edit.Check{
				Name: "ObjectsValidAsNew", Outcome: edit.Warn,
				Message: fmt.Sprintf("%d object(s) were not checked as new objects at %s: their namespace is being deleted, and the API server creates nothing there (they go with it); the update migrate sends was accepted for them", n, to),
				Details: cluster.ProblemLines(found.NotCheckedAsNew),
			})
		}
	}
	if from == to {
		// Read at one version only: nothing was compared.
		return cs
	}
	if n := len(found.NotRoundTripped); n > 0 {
		details := lossLines(found.NotRoundTripped)
		c := edit.Check{Name: "RoundTrip", Outcome: edit.Fail, Details: details,
			Message: fmt.Sprintf("%d object(s) do not come back whole from %s through %s (the conversion webhook's answers, as the API server's dry run stored and read them back): once stored at %s, clients reading them at %s lose these fields, and so does a move back; fix the webhook's %s -> %s conversion, or accept exactly these losses with %s", n, to, from, to, from, to, from, way)}
		if allowPruning {
			c.Outcome = edit.Warn
			c.Message = fmt.Sprintf("%d object(s) do not come back whole from %s through %s: these fields WILL BE LOST for clients reading them at %s once stored at %s (--allow-pruning)", n, to, from, from, to)
		}
		cs = append(cs, c)
	}
	if n := len(found.Changed); n > 0 {
		details := lossLines(found.Changed)
		c := edit.Check{Name: "ValuesKept", Outcome: edit.Fail, Details: details,
			Message: fmt.Sprintf("%d object(s) have values at %s that the update through %s changes (a conversion webhook that does not give the value back, or admission on UPDATE: a mutating webhook or policy): rewriting them at %s changes that data; fix the conversion or make the admission spare them, or accept exactly these changes with %s", n, from, to, to, way)}
		if allowPruning {
			c.Outcome = edit.Warn
			c.Message = fmt.Sprintf("%d object(s) have values at %s that the update through %s changes: they WILL BE CHANGED when the objects are rewritten at %s (--allow-pruning)", n, from, to, to)
		}
		cs = append(cs, c)
	}
	if len(found.Lost) == 0 {
		if len(found.Forbidden) == 0 {
			cs = append(cs, edit.Check{
				Name: "FieldsKept", Outcome: edit.Pass,
				Message: fmt.Sprintf("no field of the %d object(s) read at %s is missing at %s (compared as the API server returns them)%s", found.Listed, from, to, map[bool]string{true: ", other than those accepted", false: ""}[len(accepted) > 0]),
			})
		}
		return cs
	}
	details := lossLines(found.Lost)
	if allowPruning {
		return append(cs, edit.Check{
			Name: "FieldsKept", Outcome: edit.Warn,
			Message: fmt.Sprintf("%d object(s) have fields at %s that %s drops: they WILL BE LOST when the objects are rewritten at %s (--allow-pruning)", len(found.Lost), from, to, to),
			Details: details,
		})
	}
	return append(cs, edit.Check{
		Name: "FieldsKept", Outcome: edit.Fail,
		Message: fmt.Sprintf("%d object(s) have fields at %s that %s drops (each read at %s and at %s, or sent migrate's no-op update through it as a server-side dry run, then compared): rewriting them at %s loses that data; make %s's schema keep the fields (or the admission that removes them on UPDATE, a mutating webhook or policy, spare them), or accept exactly these losses with %s", len(found.Lost), from, to, from, to, to, to, way),
		Details: details,
	})
}

func lossLines(ls []cluster.ObjectLoss) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}
