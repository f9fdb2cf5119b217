package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Checks writes the preflight report, one check a line.
func Checks(w io.Writer, cs edit.Checks) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "Preflight:")
	for _, c := range cs {
		fmt.Fprintf(w, "  %-4s  %s\n", strings.ToUpper(string(c.Outcome)), c.Message)
		for _, d := range c.Details {
			fmt.Fprintf(w, "          - %s\n", d)
		}
	}
}

// DryRunSuffix is " (server dry run)" or " (dry run)" after what a dry run
// of strategy s would have done, "" for a real write.
func DryRunSuffix(s lifecycle.DryRun) string {
	switch s {
	case lifecycle.DryRunClient:
		return " (dry run)"
	case lifecycle.DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// CRDRef names the CRD name as kubectl names what it edits.
func CRDRef(name string) string { return "customresourcedefinition.apiextensions.k8s.io/" + name }

// Unserved writes the line printed once groupVersion left discovery: the
// API server no longer serves it, but clients that cached discovery —
// kubectl's disk cache, long-running controllers — keep its path until
// they refresh, and get 404 from it (case 35; kubectl 1.32's behaviour is
// tested in TestCase35CachedDiscoveryAfterUnserve). refresh is the kubectl
// api-resources command, with the connection flags and --cache-dir typed,
// that refreshes kubectl's cache.
func Unserved(w io.Writer, groupVersion, refresh string) {
	fmt.Fprintf(w, "Unserved: %s is out of discovery. Clients that cached discovery keep calling it (404) until they refresh: run %s to refresh kubectl's cache, and restart long-running controllers that cache it (GitOps, policy engines, operators)\n", groupVersion, refresh)
}
