package fleet

import (
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
)

// SetAnalysis fills in what c says about the CRD from its analysis in that
// cluster: its name, lifecycle state, storage version and
// status.storedVersions, the versions in spec.versions and those served
// (each in the analysis' order), those newer than the storage version, and
// the messages of its error-level
// findings as Blocking. Objects, Reach and the rest are left as they are.
func (c *Cluster) SetAnalysis(a *lifecycle.Analysis) {
	c.Name = a.CRD.Name
	c.State, c.StorageVersion, c.StoredVersions = a.State, a.StorageVersion, a.StoredVersions
	for _, v := range a.Versions {
		if v.InSpec {
			c.Versions = append(c.Versions, v.Name)
		}
		if v.Served {
			c.Served = append(c.Served, v.Name)
		}
	}
	c.NewerThanStorage = a.NewerThanStorage()
	for _, f := range a.Findings {
		if f.Severity == lifecycle.SeverityError {
			c.Blocking = append(c.Blocking, f.Message)
		}
	}
}

// CRDName is the CRD's name in the first of clusters that was reached, or
// arg (the name as the command line gave it) when none was.
func CRDName(clusters []Cluster, arg string) string {
	for _, c := range clusters {
		if c.Reach == reach.Reached {
			return c.Name
		}
	}
	return arg
}
