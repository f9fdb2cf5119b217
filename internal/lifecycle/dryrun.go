package lifecycle

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DryRun is the one shape of --dry-run from the flag to the request: the
// command converts the flag once (internal/cli) and every layer below
// carries this value unchanged down to the write it governs.
type DryRun int

const (
	// DryRunNone writes for real.
	DryRunNone DryRun = iota
	// DryRunClient sends no write: the run plans, counts and prints what it
	// would send.
	DryRunClient
	// DryRunServer sends each write with dryRun=All: the API server
	// validates and admits it and persists nothing.
	DryRunServer
)

// String is the flag's value for d: none, client or server.
func (d DryRun) String() string {
	switch d {
	case DryRunClient:
		return "client"
	case DryRunServer:
		return "server"
	}
	return "none"
}

// Request is the DryRun field of the write request d sends
// (metav1.CreateOptions, UpdateOptions, PatchOptions): [All] for a server
// dry run, nil otherwise. A client dry run sends no write at all.
func (d DryRun) Request() []string {
	if d == DryRunServer {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// Sends says whether the run sends its writes to the API server, for real
// or as a server dry run.
func (d DryRun) Sends() bool { return d != DryRunClient }

// Persists says whether the writes persist: no dry run at all.
func (d DryRun) Persists() bool { return d == DryRunNone }
