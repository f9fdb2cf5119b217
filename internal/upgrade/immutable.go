package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// Immutable is what a release that changes an installed CRD's scope, kind
// or group puts at stake. The API server rejects such an update of an
// established CRD (spec.scope and spec.names.kind are immutable once it is
// established, spec.group always): it is not a version change, and no
// kubectl crdversion step makes it one. Its only ways out are a new CRD
// beside the old one, or the CRD deleted and re-created, which deletes
// every object of it (case 28, kubernetes/kubernetes#106625).
type Immutable struct {
	// Fields are the CRD fields the release changes: spec.scope,
	// spec.names.kind, spec.group.
	Fields []string `json:"fields"`
	// Kind is the installed CRD's kind.
	Kind string `json:"kind"`
	// ScopeFrom and ScopeTo are set when the scope changes.
	ScopeFrom apiextensionsv1.ResourceScope `json:"scopeFrom,omitempty"`
	ScopeTo   apiextensionsv1.ResourceScope `json:"scopeTo,omitempty"`
	// Objects is the number of objects that deleting the CRD deletes,
	// listed through Version; meaningful when Counted.
	Objects int    `json:"objects"`
	Version string `json:"version,omitempty"`
	Counted bool   `json:"counted"`
	// CountError says why the objects could not be counted (the count is
	// then unknown, not zero).
	CountError string `json:"countError,omitempty"`
	// Collisions are the names used in more than one namespace: once the
	// scope is Cluster, only one object of each can exist (Namespaced to
	// Cluster only).
	Collisions []string `json:"collisions,omitempty"`
	// Export is the command that saves every object before anything is
	// deleted (kubectl get … -o yaml), rendered with the connection flags;
	// ExportFile is where it writes them.
	Export     string `json:"export"`
	ExportFile string `json:"exportFile"`
}

// immutableFields are the finding codes of a change the API server
// refuses on an established CRD whatever the order of steps.
var immutableFields = map[string]string{schemadiff.CodeScopeChanged: "spec.scope", schemadiff.CodeKindChanged: "spec.names.kind", schemadiff.CodeGroupChanged: "spec.group"}

// immutableOf is the Immutable of a plan whose findings change scope,
// kind or group; nil otherwise. It is not counted yet.
func immutableOf(p Plan, live, next *apiextensionsv1.CustomResourceDefinition, global []lifecycle.Flag) *Immutable {
	var fields []string
	for _, f := range p.Findings {
		if field, ok := immutableFields[f.Code]; ok && !slices.Contains(fields, field) {
			fields = append(fields, field)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	slices.Sort(fields)
	// In a fleet run each cluster's export gets its own file.
	file := live.Name + ".yaml"
	for _, f := range global {
		if f.Name == "context" && f.Value != "" {
			file = live.Name + "." + strings.Map(fileSafe, f.Value) + ".yaml"
		}
	}
	im := &Immutable{Fields: fields, Kind: live.Spec.Names.Kind, ExportFile: file}
	if live.Spec.Scope != next.Spec.Scope {
		im.ScopeFrom, im.ScopeTo = live.Spec.Scope, next.Spec.Scope
	}
	export := lifecycle.Kubectl("get", live.Name).With("o", "yaml")
	if live.Spec.Scope == apiextensionsv1.NamespaceScoped {
		export = export.With("all-namespaces", "")
	}
	im.Export = export.Render(global) + " > " + im.ExportFile
	return im
}

// count lists the objects of live (metadata only) through the version it
// serves them at, and the names a Namespaced to Cluster change makes
// collide. A list the API server refuses leaves the count unknown with
// its message; other errors are returned.
func (im *Immutable) count(ctx context.Context, c Cluster, live *apiextensionsv1.CustomResourceDefinition, pageSize int64) error {
	im.Version = lifecycle.ListVersion(live)
	if im.Version == "" {
		im.CountError = "no version is served: the objects cannot be listed"
		return nil
	}
	namespaces := map[string]map[string]bool{}
	err := c.EachObjectMeta(ctx, live, im.Version, pageSize, func(o metav1.Object) error {
		namespace, name := o.GetNamespace(), o.GetName()
		im.Objects++
		if namespaces[name] == nil {
			namespaces[name] = map[string]bool{}
		}
		namespaces[name][namespace] = true
		return nil
	})
	if err != nil {
		if !isAPIStatus(err) {
			return err
		}
		im.Objects, im.CountError = 0, err.Error()
		return nil
	}
	im.Counted = true
	if im.ScopeTo == apiextensionsv1.ClusterScoped {
		for name, in := range namespaces {
			if len(in) > 1 {
				im.Collisions = append(im.Collisions, name)
			}
		}
		slices.Sort(im.Collisions)
	}
	return nil
}

// Describe says in words what is at stake and the ways out, the delete
// never as a command: what deleting the CRD deletes, the export first.
func (im *Immutable) Describe(name string) string {
	kind := im.Kind
	var b strings.Builder
	fmt.Fprintf(&b, "%s cannot change on an installed CRD: not a version change, and no crdversion step makes it one; ", strings.Join(im.Fields, ", "))
	switch {
	case im.Counted:
		fmt.Fprintf(&b, "%d %s object(s) exist (listed at %s). ", im.Objects, kind, im.Version)
	default:
		fmt.Fprintf(&b, "how many %s objects exist is unknown (%s). ", kind, im.CountError)
	}
	if slices.Contains(im.Fields, "spec.group") {
		// A CRD's name is its plural and group: one of another group is
		// another CRD, never this one re-created.
		fmt.Fprintf(&b, "A CRD's name is spec.names.plural + \".\" + spec.group, so a CRD of another group is a new CRD beside %s, never %s re-created: create it, copy the objects to it (export them first: %s) and move clients over", name, name, im.Export)
		return b.String() + im.exportNote()
	}
	b.WriteString("Ways out: (a) a new CRD (another group or plural) with the release's definition, the objects copied to it and clients moved over; ")
	fmt.Fprintf(&b, "(b) export every object first (%s), then delete and re-create %s and re-create the objects from the export: DELETING THE CRD DELETES EVERY OBJECT OF IT", im.Export, name)
	if im.Counted {
		fmt.Fprintf(&b, " (%d)", im.Objects)
	}
	b.WriteString(", with no undo")
	switch {
	case im.ScopeTo == apiextensionsv1.NamespaceScoped:
		b.WriteString("; Cluster to Namespaced: each object needs the namespace it goes to")
	case im.ScopeTo == apiextensionsv1.ClusterScoped && len(im.Collisions) > 0:
		fmt.Fprintf(&b, "; Namespaced to Cluster: %d name(s) are used in more than one namespace (%s), and only one object of each can exist", len(im.Collisions), strings.Join(firstN(im.Collisions, 5), ", "))
	}
	return b.String() + im.exportNote()
}

// exportNote says what the export must hold, or, when this user could not
// list the objects, that its export would write an empty list.
func (im *Immutable) exportNote() string {
	switch {
	case im.Counted:
		return fmt.Sprintf("; check that %s holds all %d before going on", im.ExportFile, im.Objects)
	case im.CountError == ErrNoCluster.Error():
		return fmt.Sprintf("; check that %s holds every object before going on", im.ExportFile)
	}
	return fmt.Sprintf("; the export needs a user allowed to list the objects: run as this one it fails and leaves %s without them", im.ExportFile)
}

// fileSafe keeps letters, digits, '.', '-' and '_' of a context name for
// a file name, and turns the rest into '_'.
func fileSafe(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		return r
	}
	return '_'
}

// isAPIStatus tells whether err is the API server's answer (a refused
// list), not a failure to reach it; or Offline's ErrNoCluster (nothing
// to ask): either leaves a count unknown.
func isAPIStatus(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) || errors.Is(err, ErrNoCluster)
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
