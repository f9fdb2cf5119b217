// Package fleet answers, for one CRD across many clusters, the question the
// Kubernetes task page "Versions in CustomResourceDefinitions" asks before
// an old version leaves a CRD manifest: in every cluster that ever served
// it, were the stored objects migrated and did the version leave
// status.storedVersions? A manifest without a version that some cluster's
// status.storedVersions still lists is rejected by that cluster's API
// server. Verdicts is pure; the caller reads each cluster.
package fleet

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
)

// Cluster is what was read from one kubeconfig context.
type Cluster struct {
	Context string      `json:"context"`
	Server  string      `json:"server,omitempty"`
	Reach   reach.Reach `json:"reach"`
	// Name is the CRD's name there, when reached.
	Name string `json:"name,omitempty"`
	// Error is the error when Reach is not Reached or NotInstalled.
	Error string `json:"error,omitempty"`
	// State, StorageVersion and StoredVersions come from the CRD's analysis.
	State          lifecycle.State `json:"state,omitempty"`
	StorageVersion string          `json:"storageVersion,omitempty"`
	StoredVersions []string        `json:"storedVersions,omitempty"`
	// Served lists the versions the cluster serves.
	Served []string `json:"served,omitempty"`
	// Versions lists spec.versions.
	Versions []string `json:"versions,omitempty"`
	// NewerThanStorage lists the versions of spec.versions newer than the
	// storage version there (lifecycle.Analysis.NewerThanStorage): not on
	// their way out.
	NewerThanStorage []string `json:"newerThanStorage,omitempty"`
	// Objects is the object count, nil when not counted or not countable.
	Objects *int `json:"objects,omitempty"`
	// Blocking are the cluster's error-level findings, one line each.
	Blocking []string `json:"blocking,omitempty"`
	// Seconds is how long reading the cluster took.
	Seconds float64 `json:"seconds"`
}

// Answer of a verdict.
type Answer string

// The answers: yes, no, or unknown when a cluster that decides it could not
// be read.
const (
	Yes     Answer = "yes"
	No      Answer = "no"
	Unknown Answer = "unknown"
)

// Blocker is a cluster that keeps a version in the manifest.
type Blocker struct {
	Context string `json:"context"`
	// Answer is No (the cluster blocks) or Unknown (it could not be read).
	Answer Answer `json:"answer"`
	Reason string `json:"reason"`
	// Run are the commands that unblock it, in order, run against that
	// cluster; Command is their rendering with --context (see
	// lifecycle.Command.Render).
	Command string              `json:"command,omitempty"`
	Run     []lifecycle.Command `json:"run,omitempty"`
}

// Rendered returns a copy of b with Command rendered with the connection
// flags global, to which --context of b's cluster is added.
func (b Blocker) Rendered(global []lifecycle.Flag) Blocker {
	b.Command = lifecycle.RenderAll(b.Run, append(slices.Clone(global), lifecycle.Flag{Name: "context", Value: b.Context}))
	return b
}

// Verdict answers "can Version leave the CRD manifest?".
type Verdict struct {
	Version  string    `json:"version"`
	Answer   Answer    `json:"answer"`
	Blockers []Blocker `json:"blockers,omitempty"`
	// Notes are warnings that do not block: clusters still serving the
	// version (its clients break when it leaves).
	Notes []string `json:"notes,omitempty"`
}

// Verdicts answers for each version asked, or, when none is, for every
// version some reachable cluster has in spec.versions or storedVersions
// except those that are the storage version everywhere and those newer
// than the storage version in some cluster (the lifecycle moves towards
// them). crdName is used in the commands.
func Verdicts(crdName string, clusters []Cluster, asked []string) []Verdict {
	versions := asked
	if len(versions) == 0 {
		seen := map[string]bool{}
		storageEverywhere := map[string]int{}
		newer := map[string]bool{}
		reached := 0
		for _, c := range clusters {
			if c.Reach != reach.Reached {
				continue
			}
			reached++
			storageEverywhere[c.StorageVersion]++
			for _, v := range append(slices.Clone(c.Versions), c.StoredVersions...) {
				seen[v] = true
			}
			for _, v := range c.NewerThanStorage {
				newer[v] = true
			}
		}
		for v := range seen {
			if storageEverywhere[v] != reached && !newer[v] {
				versions = append(versions, v)
			}
		}
		versions = lifecycle.ByPriority(versions)
		slices.Reverse(versions) // oldest first: the ones on their way out
	}
	out := make([]Verdict, 0, len(versions))
	for _, v := range versions {
		out = append(out, verdict(crdName, clusters, v))
	}
	return out
}

func verdict(crdName string, clusters []Cluster, v string) Verdict {
	out := Verdict{Version: v, Answer: Yes}
	for _, c := range clusters {
		here := []lifecycle.Flag{{Name: "context", Value: c.Context}}
		switch c.Reach {
		case reach.NotInstalled:
			continue
		case reach.Reached:
		default:
			out.Blockers = append(out.Blockers, Blocker{Context: c.Context, Answer: Unknown,
				Reason: fmt.Sprintf("%s: %s", strings.ToLower(string(c.Reach)), c.Error),
				Run:    []lifecycle.Command{lifecycle.Crdversion("status", crdName)}}.Rendered(nil))
			continue
		}
		if slices.Contains(c.StoredVersions, v) {
			b := Blocker{Context: c.Context, Answer: No}
			switch {
			case c.StorageVersion == v:
				b.Reason = fmt.Sprintf("%s is the storage version there, and status.storedVersions is [%s]", v, strings.Join(c.StoredVersions, ", "))
				b.Run = []lifecycle.Command{lifecycle.Crdversion("promote-storage", crdName, successor(c, v)), lifecycle.Crdversion("migrate", crdName)}
			case !slices.Contains(c.Versions, v):
				b.Reason = fmt.Sprintf("status.storedVersions [%s] lists %s, which spec.versions no longer has: objects stored at it are unreadable", strings.Join(c.StoredVersions, ", "), v)
				b.Run = []lifecycle.Command{lifecycle.RestoreUnserved(crdName, v), lifecycle.Crdversion("migrate", crdName)}
			default:
				b.Reason = fmt.Sprintf("status.storedVersions is [%s]: objects may still be stored at %s", strings.Join(c.StoredVersions, ", "), v)
				b.Run = []lifecycle.Command{lifecycle.Crdversion("migrate", crdName)}
			}
			out.Blockers = append(out.Blockers, b.Rendered(nil))
			continue
		}
		if slices.Contains(c.NewerThanStorage, v) {
			// Asked for by name: no command to retire it is printed.
			out.Notes = append(out.Notes, fmt.Sprintf("%s is newer than the storage version %s in %s: removing it moves the lifecycle backwards there", v, c.StorageVersion, c.Context))
			continue
		}
		if slices.Contains(c.Served, v) {
			out.Notes = append(out.Notes, fmt.Sprintf("%s still serves %s: clients that use it there break when it leaves the manifest (%s checks them)", c.Context, v,
				lifecycle.Crdversion("retire", crdName, v).With("dry-run", "").Render(here)))
		}
	}
	for _, b := range out.Blockers {
		if b.Answer == No {
			out.Answer = No
			break
		}
		out.Answer = Unknown
	}
	return out
}

// successor is the version to make the storage version in c instead of v:
// the served version of highest priority other than v, or a placeholder
// when c serves none.
func successor(c Cluster, v string) string {
	var served []string
	for _, s := range c.Served {
		if s != v {
			served = append(served, s)
		}
	}
	if len(served) == 0 {
		return lifecycle.PlaceholderNewVersion
	}
	return lifecycle.ByPriority(served)[0]
}
