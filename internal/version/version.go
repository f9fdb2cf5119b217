// Package version holds the build's version and commit. Release builds set
// them with
//
//	-ldflags "-X github.com/crdversion/kubectl-crdversion/internal/version.version=v0.1.0
//	          -X github.com/crdversion/kubectl-crdversion/internal/version.commit=<sha>"
//
// A `go install …@vX.Y.Z` build gets the module version from the binary's
// build information instead.
package version

import (
	"runtime"
	"runtime/debug"
)

var (
	version = ""
	commit  = ""
)

// Info describes this build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version information. Unset fields read "unknown"
// (version "(devel)" for a build from a work tree).
func Get() Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Commit == "" {
				info.Commit = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}
