// Package reach names whether one cluster of a fleet run could be read: the
// one value that cluster (which classifies the error, cluster.ReachOf),
// fleet (which builds verdicts from it) and report (which prints it) share.
// It imports nothing.
package reach

// Reach says whether a cluster could be read.
type Reach string

const (
	// Reached means the CRD was read.
	Reached Reach = "Reached"
	// NotInstalled means the cluster answered and has no such CRD.
	NotInstalled Reach = "NotInstalled"
	// Unreachable means there was no answer (connection refused, timeout, TLS, …).
	Unreachable Reach = "Unreachable"
	// Forbidden means the answer was 401 or 403.
	Forbidden Reach = "Forbidden"
	// Failed is any other error.
	Failed Reach = "Failed"
)
