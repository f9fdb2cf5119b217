package report

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// ReferenceRepair (kind ReferenceRepair) is the output of `kubectl
// crdversion repair-references`: the references that named the
// version, what rewriting each did, and what the inventory could not read.
type ReferenceRepair struct {
	metav1.TypeMeta `json:",inline"`
	CRD             string `json:"crd"`
	Version         string `json:"version"`
	// Target is the owner apiVersion and kind looked for; To the
	// apiVersion the references name after the repair.
	Target references.Target `json:"target"`
	To     string            `json:"to"`
	// DryRun is "client" or "server" for a dry run, "" when written.
	DryRun string `json:"dryRun,omitempty"`
	// Found is the number of references the inventory found;
	// Repairs are those tried (fewer when the run was interrupted).
	Found int `json:"found"`
	// Resources and Objects are what the inventory read.
	Resources int                 `json:"resources"`
	Objects   int64               `json:"objects"`
	Repairs   []references.Repair `json:"repairs"`
	Unseen    []references.Unseen `json:"unseen,omitempty"`
}

// Count is the number of repairs with outcome o.
func (r *ReferenceRepair) Count(o references.Outcome) int {
	n := 0
	for _, x := range r.Repairs {
		if x.Outcome == o {
			n++
		}
	}
	return n
}

// DeepCopyObject implements runtime.Object.
func (r *ReferenceRepair) DeepCopyObject() runtime.Object {
	out := *r
	out.Repairs = slices.Clone(r.Repairs)
	out.Unseen = slices.Clone(r.Unseen)
	return &out
}
