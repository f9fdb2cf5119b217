package managedfields

// ObjectRef names one custom object.
type ObjectRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is "namespace/name", or "name" for a cluster-scoped object.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// ObjectFailure is an object a write failed for, with the API server's
// message.
type ObjectFailure struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}

// Cleanup is the outcome of rewriting the managedFields of a CRD's objects
// so that no entry names a version (Relabel applied object by object).
type Cleanup struct {
	// Rewritten objects had their managedFields rewritten.
	Rewritten int `json:"rewritten"`
	// Current objects no longer had a stale entry when read.
	Current int `json:"current"`
	// Deleted objects were gone (404); nothing was re-created.
	Deleted int `json:"deleted"`
	// Relabeled and Merged count entries (see Relabel).
	Relabeled int `json:"relabeled"`
	Merged    int `json:"merged"`
	// Failed objects, with the API server's message.
	Failed []ObjectFailure `json:"failed,omitempty"`
}
